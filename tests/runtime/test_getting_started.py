"""The getting-started page's program, as a user would copy it: a script run
by itself on a schema it migrates, the duroxide 0.2.2 runtime running the
orchestration and our worker serving its activity (tests/deploy/test_wheel.py
runs it from the installed wheel too)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg

from tests.support.db import new_schema_name
from tests.support.paths import REPO

PAGE = REPO / "docs" / "getting-started.md"
MARKER = "<!-- getting-started-program:"
EXPECTED = "Completed order 1: charged 42 EUR (attempt 1)"


def getting_started_program() -> str:
    found = re.search(re.escape(MARKER) + r".*?-->\n```python\n(.*?)```", PAGE.read_text(), re.S)
    assert found is not None, f"no python block after {MARKER} in {PAGE}"
    return found.group(1)


def test_the_getting_started_program_prints_its_result(
    database_url: str, sql: psycopg.Connection[Any], tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(getting_started_program())
    schema = new_schema_name("start")  # not there yet: the example migrates it
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,  # a user's folder, not the repository
            env={**os.environ, "DATABASE_URL": database_url, "TASKHUB_SCHEMA": schema},
            capture_output=True,
            text=True,
            timeout=30,
        )
    finally:
        sql.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == EXPECTED
    # The comment in the page says what it prints.
    assert f"# {EXPECTED}" in getting_started_program()
