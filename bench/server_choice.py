"""Which PostgreSQL a benchmark starts when it is given no server URL: the
machine's (PG_BIN, or the newest /usr/lib/postgresql/*/bin), a bin folder of
the user's own (--pg-bin), or one of the pinned majors the test matrix uses
(--major, fetched and checked by devkit/pgbinaries.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from devkit import pgbinaries


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """--pg-bin and --major, for a benchmark that starts its own server."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--pg-bin", type=Path, help="the server's bin folder (else PG_BIN)")
    group.add_argument(
        "--major",
        type=int,
        choices=pgbinaries.MAJORS,
        help="the pinned binaries of this PostgreSQL major (as make test-matrix)",
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


def use_server_options(args: argparse.Namespace) -> Path | None:
    """Point the embedded server at the options' binaries (through PG_BIN, which
    provider/testing/embedded_pg.py reads); the folder, or None."""
    chosen = bin_dir_for(args.pg_bin, args.major)
    if chosen is not None:
        os.environ["PG_BIN"] = str(chosen)
    return chosen
