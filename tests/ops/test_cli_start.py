"""The command line loads Alembic and SQLAlchemy for the deploy verbs only:
`--help` and the runbook's verbs start without them (they are about a third
of a start). A fresh interpreter runs each verb, then names what it loaded."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import REPO

# Runs one verb through main(), as the console script does, and prints the
# exit code and which of the deploy layer's libraries got loaded.
PROBE = """
import json, sys
from provider.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stopped:
    code = stopped.code
loaded = sorted({name.split(".")[0] for name in sys.modules} & {"alembic", "sqlalchemy"})
print(json.dumps({"code": code, "loaded": loaded}), file=sys.__stderr__)
"""
DEPLOY_LIBRARIES = ["alembic", "sqlalchemy"]


def loaded_by(*argv: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    probe = json.loads(done.stderr.strip().splitlines()[-1])
    return int(probe["code"] or 0), list(probe["loaded"])


@pytest.mark.parametrize(
    "argv", [("--help",), ("inspect", "--help"), ("upgrade", "--help")], ids=" ".join
)
def test_help_loads_neither_alembic_nor_sqlalchemy(argv: tuple[str, ...]) -> None:
    assert loaded_by(*argv) == (0, [])


def test_inspect_queues_loads_neither_alembic_nor_sqlalchemy(
    database_url: str, hub_schema: str
) -> None:
    assert loaded_by("inspect", "queues", "--url", database_url, "--schema", hub_schema) == (0, [])


def test_a_deploy_verb_does_load_them(database_url: str, hub_schema: str) -> None:
    """The probe sees them when a verb needs them: `status` reads the head revision."""
    found = loaded_by("status", "--url", database_url, "--schema", hub_schema)
    assert found == (0, DEPLOY_LIBRARIES)
