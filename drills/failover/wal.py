"""Positions in the write-ahead log: LSNs as numbers, the last checkpoint of
a stopped server, and what a crashed primary wrote that its standby never
received (pg_waldump over the crashed server's own pg_wal)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# pg_waldump's line for a transaction's commit record.
COMMIT_RECORD = re.compile(r"rmgr: Transaction .*desc: COMMIT")
# Where pg_waldump stopped: the end of the WAL it could read.
END_OF_WAL = re.compile(r"(?:at|after) ([0-9A-F]+/[0-9A-F]+)")


def lsn(text: str) -> int:
    """'16/B374D848' as a byte position (comparable across timelines)."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def lsn_text(position: int) -> str:
    return f"{position >> 32:X}/{position & 0xFFFFFFFF:X}"


SEGMENT = re.compile(r"[0-9A-F]{24}")


def last_checkpoint(bin_dir: Path, data_dir: Path) -> int:
    """Where the last checkpoint record of a stopped server is (pg_control;
    root reads it, as does its owner): after a clean shutdown, its last record."""
    done = subprocess.run(
        [str(bin_dir / "pg_controldata"), str(data_dir)],
        capture_output=True,
        text=True,
        check=True,
        env={"LC_ALL": "C"},
    )
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in done.stdout.splitlines())
    )
    return lsn(fields["Latest checkpoint location"])


def newest_timeline(data_dir: Path) -> int:
    """The timeline a server last wrote on: its newest segment's (pg_control
    may still name the one before, until a checkpoint after a promotion)."""
    names = [path.name for path in (data_dir / "pg_wal").iterdir()]
    return max(int(name[:8], 16) for name in names if SEGMENT.fullmatch(name))


@dataclass(frozen=True)
class Unreceived:
    """The records of a crashed primary's WAL after a position."""

    records: int
    commits: int
    end: int  # where its readable WAL ends

    def line(self) -> str:
        return f"{self.records} WAL records, {self.commits} commits, up to {lsn_text(self.end)}"


def unreceived(bin_dir: Path, data_dir: Path, since: int) -> Unreceived:
    """Everything the server in data_dir wrote after `since` (a standby's
    received position): pg_waldump reads from the first record at or after
    it to the end of what was written."""
    done = subprocess.run(
        [
            str(bin_dir / "pg_waldump"),
            "--path",
            str(data_dir / "pg_wal"),
            "--start",
            lsn_text(since),
            "--timeline",
            str(newest_timeline(data_dir)),
        ],
        capture_output=True,
        text=True,
    )
    lines = done.stdout.splitlines()
    # It always ends in an error: the first position with no valid record.
    ends = END_OF_WAL.findall(done.stderr)
    end = lsn(ends[-1]) if ends else since
    return Unreceived(
        records=len(lines),
        commits=sum(1 for line in lines if COMMIT_RECORD.search(line)),
        end=max(end, since),
    )
