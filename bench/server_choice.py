"""Which PostgreSQL a benchmark runs on: a server of the user's (--url, else
DATABASE_URL), or one the benchmark starts from the machine's binaries
(PG_BIN, else the newest /usr/lib/postgresql/*/bin), from a bin folder of
the user's own (--pg-bin), or from one of the pinned majors the test matrix
uses (--major, fetched and checked by devkit/pgbinaries.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import psycopg

from devkit import pgbinaries


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """--url, --pg-bin and --major (one of them at most)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--url", help="server URL (default: DATABASE_URL, else one started here)")
    group.add_argument("--pg-bin", type=Path, help="start a server from this bin folder")
    group.add_argument(
        "--major",
        type=int,
        choices=pgbinaries.MAJORS,
        help="start a server of this major's pinned binaries (as make test-matrix)",
    )


def bin_dir_for(pg_bin: Path | None, major: int | None) -> Path | None:
    """The bin folder the options name, or None for the default."""
    if major is not None:
        return pgbinaries.bin_dir(major)
    if pg_bin is not None:
        if not (pg_bin / "pg_ctl").exists():
            raise SystemExit(f"--pg-bin {pg_bin}: no pg_ctl there")
        return pg_bin
    return None


def refuse_database_url(starting: str) -> None:
    """A run that starts its own server on named binaries would otherwise
    measure DATABASE_URL's server (sides.database_url prefers it) under the
    wrong name; and DATABASE_URL always wins elsewhere, so it is not ignored."""
    if os.environ.get("DATABASE_URL"):
        raise SystemExit(
            f"{starting} starts a server of its own, but DATABASE_URL names another:"
            " unset DATABASE_URL to run it"
        )


def use_bin_dir(bin_dir: Path) -> None:
    """Have the embedded server start from `bin_dir` (provider/testing/
    embedded_pg.py reads PG_BIN)."""
    os.environ["PG_BIN"] = str(bin_dir)


def use_server_options(args: argparse.Namespace) -> str | None:
    """The URL the options name, or None to take DATABASE_URL or start a
    server (sides.database_url), pointed at the binaries the options name."""
    chosen = bin_dir_for(args.pg_bin, args.major)
    if chosen is None:
        url: str | None = args.url
        return url
    refuse_database_url("--major" if args.major is not None else "--pg-bin")
    use_bin_dir(chosen)
    return None


def server_version(url: str) -> str:
    """The server's version, as `SHOW server_version` gives it, first word."""
    with psycopg.connect(url) as conn:
        row: tuple[Any, ...] | None = conn.execute("SHOW server_version").fetchone()
    return str(row[0]).split()[0] if row else "unknown"
