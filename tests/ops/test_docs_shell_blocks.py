"""The runnable shell blocks of the README and the docs run as written.

Each page's runnable blocks run in order, as a reader would type them, in one
`bash -euo pipefail`, with the built wheel installed in a fresh virtualenv
(tests/support/wheel.py) first on PATH, from a folder of the reader's own
(holding the two lines of pyproject.toml the pages tell an Alembic user to
write), against a database made for the page. What the reader brings, the
test brings:

* `export DATABASE_URL=...` names the reader's server: the line is left out,
  and DATABASE_URL (with libpq's PGHOST, PGPORT, PGUSER and PGDATABASE, for
  psql) names the page's database instead;
* the pages that operate a hub take the reader's hub for granted: the script
  deploys one first (`taskhub-pg upgrade --schema orders`; on the pages that
  deploy, their own upgrade then finds nothing to apply);
* the roles the pages have an admin create (`hub_owner`, `hub_runtime`,
  `hub_operator`) get names of this run, so that runs sharing a server
  never share a role, and are dropped afterwards.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from provider.testing.embedded_pg import client_tool
from tests.support.doc_blocks import runnable_pages, shell_blocks
from tests.support.paths import REPO
from tests.support.wheel import WheelBuild, built_wheel, wheel_venv

pytestmark = pytest.mark.slow

ROLES = ("hub_owner", "hub_runtime", "hub_operator")
# docs/getting-started.md and docs/deploying.md: a project's Alembic settings.
USERS_PYPROJECT = '[tool.alembic]\nscript_location = "provider:_migrations"\n'
_EXPORT_URL = re.compile(r"^export DATABASE_URL=.*$", re.MULTILINE)


def script_of(page: Path, roles: dict[str, str]) -> str:
    """The page's runnable blocks as one script, the reader's server and role
    names replaced as the module's docstring says."""
    lines = [
        "set -euo pipefail",
        "taskhub-pg upgrade --schema orders >/dev/null  # the reader's hub",
    ]
    for block in shell_blocks(page):
        if block.mark != "runnable":
            continue
        body = _EXPORT_URL.sub("", block.body)
        for role, ours in roles.items():
            body = re.sub(rf"\b{role}\b", ours, body)
        lines += [f"# {block.where}", body]
    return "\n".join(lines) + "\n"


@pytest.fixture
def page_database(server_url: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A database and the pages' roles, made for one page and dropped after it."""
    run = uuid.uuid4().hex[:8]
    database = f"docs_{run}"
    roles = {role: f"{role}_{run}" for role in ROLES}
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
        for ours in roles.values():
            conn.execute(f'CREATE ROLE "{ours}" LOGIN')
    try:
        yield urlunsplit(urlsplit(server_url)._replace(path=f"/{database}")), roles
    finally:
        with psycopg.connect(server_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{database}" WITH (FORCE)')
            for ours in roles.values():
                conn.execute(f'DROP ROLE "{ours}"')


@pytest.fixture(scope="module")
def users_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin folder of a virtualenv holding the wheel, as a user installs it."""
    wheel: WheelBuild = built_wheel(tmp_path_factory)
    python, _ = wheel_venv(wheel, tmp_path_factory)
    return python.parent


@pytest.mark.parametrize("page", runnable_pages(), ids=lambda page: str(page.relative_to(REPO)))
def test_the_runnable_blocks_of_a_page_run_as_written(
    page: Path, page_database: tuple[str, dict[str, str]], users_bin: Path, tmp_path: Path
) -> None:
    url, roles = page_database
    (tmp_path / "pyproject.toml").write_text(USERS_PYPROJECT)
    script = tmp_path / "page.sh"
    script.write_text(script_of(page, roles))
    libpq = conninfo_to_dict(url)
    env = {
        **os.environ,
        "PATH": os.pathsep.join(
            [str(users_bin), str(Path(client_tool("psql")).parent), os.environ["PATH"]]
        ),
        "DATABASE_URL": url,
        "PGHOST": str(libpq.get("host", "")),
        "PGPORT": str(libpq.get("port", "5432")),
        "PGUSER": str(libpq.get("user", "")),
        "PGDATABASE": str(libpq["dbname"]),
        "PGPASSWORD": str(libpq.get("password", "")),
    }
    done = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    said = f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{script.read_text()}\n{said}"
