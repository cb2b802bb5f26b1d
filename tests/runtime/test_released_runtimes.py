"""The released runtime's scenario groups on duroxide 0.2.1 as well as 0.2.2.

The suite's own process runs them with 0.2.2 (test_duroxide_runtime.py).
One virtualenv holds one duroxide, so another release runs them in a
virtualenv of its own (devkit/released_runtimes.py: hash-pinned, built once
per machine and cached), in a subprocess (scenario_runner.py), on a hub this
process migrated for each way a runtime logs in. Our provider writes the
outbox groups' starts first, and their event once the orchestration listens;
the subprocess reports each group, and the test names each one that failed.
The matrix reads the groups from the test's properties (devkit/matrix.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from devkit import released_runtimes
from devkit.roles import LoginRole
from tests.runtime import provider_writes, scenarios, test_duroxide_runtime
from tests.runtime.login_modes import MODES, RuntimeLogin, hub_for
from tests.support import drift
from tests.support.paths import REPO

# Each group waits at most scenarios.WAIT_MS; together they take a few seconds.
RUN_TIMEOUT_S = 240
RUNNER = "tests.runtime.scenario_runner"


def test_every_scenario_group_runs_on_the_suites_own_release_too() -> None:
    """A group added to scenarios.py is a test of 0.2.2's as well, and the
    matrix counts it there by that test's name."""
    tests = {name for name in dir(test_duroxide_runtime) if name.startswith("test_")}
    assert {f"test_{name}" for name in scenarios.GROUPS} <= tests


def test_a_pinned_file_for_another_release_or_without_hashes_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pinned = tmp_path / "duroxide-0.2.1.txt"
    monkeypatch.setattr(released_runtimes, "pinned_file", lambda release: pinned)
    for text in (f"duroxide==0.2.2 \\\n    --hash=sha256:{'0' * 64}\n", "duroxide==0.2.1\n"):
        pinned.write_text(text)
        with pytest.raises(released_runtimes.RuntimeInstallError, match="alone, with its hashes"):
            released_runtimes.python_of("0.2.1", root=tmp_path)
    assert [path.name for path in tmp_path.iterdir()] == [pinned.name]  # nothing built


def test_a_finished_virtualenv_is_used_as_it_is(tmp_path: Path) -> None:
    """Built once per machine: a folder with the finished mark is never built
    again (this one holds nothing else, and no download is tried)."""
    folder = released_runtimes.folder_of("0.2.1", tmp_path)
    folder.mkdir()
    (folder / ".installed").touch()
    assert released_runtimes.python_of("0.2.1", root=tmp_path) == folder / "bin" / "python"
    assert [path.name for path in folder.iterdir()] == [".installed"]


# The logins a release refuses at startup, with what it says. 0.2.1's
# migration runner sends CREATE SCHEMA IF NOT EXISTS at every start, and
# PostgreSQL asks for CREATE on the database before it looks for the schema;
# 0.2.2 asks the catalogue first. So 0.2.1 logs in as a role that may create
# in the database (the owner, or a runtime role behind the DDL guard), never
# as one with --runtime-ddl none (docs/platforms.md).
REFUSED = {("0.2.1", "as_runtime_role_without_ddl"): "permission denied for database"}
SERVED = [
    (release, mode)
    for release in released_runtimes.RELEASES
    for mode in MODES
    if (release, mode) not in REFUSED
]


@pytest.mark.slow
@pytest.mark.parametrize(("release", "mode"), SERVED)
def test_scenario_groups_on_another_release(
    release: str,
    mode: str,
    database_url: str,
    runtime_login: LoginRole,
    tmp_path: Path,
    record_property: Callable[[str, object], None],
) -> None:
    python = released_runtimes.python_of(release)
    with hub_for(mode, database_url, runtime_login) as login:
        ledger = _ledger(database_url, login.schema)
        provider_writes.start_in_callers_transaction(database_url, login.schema)
        provider_writes.start_rolled_back_then_committed(database_url, login.schema)
        report = _run_groups(python, login, database_url, tmp_path)

        assert report["duroxide"] == release
        assert report["refused"] is None, report["refused"]
        # As the matrix names 0.2.2's groups: by the suite's test of each.
        record_property("duroxide", release)
        for name, failure in report["groups"].items():
            record_property(f"scenario group test_{name}", "failed" if failure else "passed")
        failed = {name: failure for name, failure in report["groups"].items() if failure}
        assert not failed, "\n".join(f"{name}:\n{failure}" for name, failure in failed.items())
        assert list(report["groups"]) == list(scenarios.GROUPS)
        # Every orchestration ended, and only the cancelled one failed.
        ended = report["instances"]
        assert set(ended) <= {"Completed", "Failed"} and ended.get("Failed") == ["cancel-1"], ended
        # Connecting found nothing to migrate: the ledger is as it was, and
        # every function is still the code the package ships.
        assert _ledger(database_url, login.schema) == ledger
        assert drift.check(database_url, login.schema).problems == []
        record_property("scenario group test_connecting_finds_nothing_to_migrate", "passed")


@pytest.mark.parametrize(("release", "mode"), list(REFUSED))
def test_a_refused_login_is_refused_at_startup_with_the_runtimes_own_words(
    release: str, mode: str, database_url: str, runtime_login: LoginRole, tmp_path: Path
) -> None:
    python = released_runtimes.python_of(release)
    with hub_for(mode, database_url, runtime_login) as login:
        ledger = _ledger(database_url, login.schema)
        report = _run_groups(python, login, database_url, tmp_path)
        assert REFUSED[release, mode] in (report["refused"] or ""), report
        assert _ledger(database_url, login.schema) == ledger


def _run_groups(python: Path, login: RuntimeLogin, admin_url: str, scratch: Path) -> Any:
    """The runner's report. The runtime's log goes to a file: it may write
    more than a pipe holds while this process waits to raise the event."""
    report, log = scratch / "report.json", scratch / "runtime.log"
    with log.open("w") as output:
        # -E -s: nothing of this process's environment or user site reaches
        # the other release's interpreter, which imports tests.runtime from the
        # checkout (its working folder) and duroxide from its own virtualenv.
        runner = subprocess.Popen(
            [str(python), "-E", "-s", "-m", RUNNER, login.url, login.schema, str(report)],
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            provider_writes.approve_once_listening(
                admin_url, login.schema, gone=lambda: runner.poll() is not None
            )
            code = runner.wait(timeout=RUN_TIMEOUT_S)
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
    assert code == 0 and report.exists(), log.read_text()[-3000:]
    return json.loads(report.read_text())


def _ledger(url: str, schema: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT version FROM {}._duroxide_migrations ORDER BY 1").format(
                sql.Identifier(schema)
            )
        ).fetchall()
    return [int(version) for (version,) in rows]
