"""The docs never show a password on a command line (issue 36): every user
of a machine can read a process's arguments (ps), so no example passes a URL
from a variable as an argument (`--url "$DATABASE_URL"`, `psql "$URL"`); the
URL comes from DATABASE_URL, a service file or a pgpass file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

DOCS = sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")])
# A URL (as a variable) handed to a command as an argument.
URL_ARGUMENT = re.compile(r"""(--url|-x\s+url=|psql)\s*=?\s*["']?\$\{?\w*(URL|DSN)""")


@pytest.mark.parametrize("doc", DOCS, ids=[str(doc.relative_to(REPO)) for doc in DOCS])
def test_no_example_puts_a_database_url_on_the_command_line(doc: Path) -> None:
    found = [
        f"{doc.name}:{number}: {line.strip()}"
        for number, line in enumerate(doc.read_text().splitlines(), start=1)
        if URL_ARGUMENT.search(line)
    ]
    assert found == []


def test_the_rule_sees_what_it_is_for() -> None:
    for line in (
        'taskhub-pg upgrade --url "$DATABASE_URL" --schema orders',
        "taskhub-pg citus placement --url $COORDINATOR_URL",
        'psql "$DATABASE_URL" -c "SELECT 1"',
        "alembic -x url=$DATABASE_URL upgrade head",
    ):
        assert URL_ARGUMENT.search(line), line
    assert not URL_ARGUMENT.search('export DATABASE_URL="$COORDINATOR_URL"')
