"""`make revision NAME=...`: start a new revision from what changed in sql/head/.

    python -m scripts.new_revision NAME [--url URL]

It compares a schema built from sql/head/ with one built by `alembic upgrade
head` (on DATABASE_URL, else the development cluster), and writes
its function versions and migrations/versions/NNNN_NAME.py from the difference
(or amends the open revision):
devkit/schema/revision_maker.py says how.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from devkit import devdb
from devkit.schema.revision_maker import start_revision


def server_url(explicit: str | None) -> str:
    if explicit or os.environ.get("DATABASE_URL"):
        return str(explicit or os.environ["DATABASE_URL"])
    return devdb.start()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.new_revision")
    parser.add_argument("name", help="the revision's name, e.g. faster_ack")
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else the dev cluster)")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        parser.error("NAME must be lower_snake_case")
    return start_revision(args.name, server_url(args.url))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
