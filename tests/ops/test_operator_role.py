"""The operator role the runbook creates (docs/ops.md, "Who may do what"):
logged in as it, every verb of the runbook runs (check, status, inspect,
prune, requeue, release-lease, cancel, raise-event, delete-instance) and
the runbook's own psql steps, and nothing more: no fetch, no ack, no write
to a queue or an instance, no DDL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import psycopg
import pytest

from provider.cli import main
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.paths import REPO
from tests.support.roles import LoginRole, login_role, operator_of


@pytest.fixture
def hub_schema(database_url: str) -> str:
    """Migrated here, not cloned from a template: `check` compares the
    definitions with what this schema's own migration recorded."""
    schema = new_schema_name("op")
    migrate.upgrade(database_url, schema)
    return schema


@pytest.fixture
def operator(database_url: str, busy_hub: str) -> Iterator[LoginRole]:
    """A login role made an operator of the hub the way the runbook says."""
    with operator_of(database_url, busy_hub) as role:
        yield role


def as_operator(
    capsys: pytest.CaptureFixture[str], role: LoginRole, schema: str, *argv: str
) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as environment:
        # As docs/ops.md has it: the URL in the environment, not in ps.
        environment.setenv("DATABASE_URL", role.url)
        code = main([*argv, "--schema", schema])
    out, err = capsys.readouterr()
    return code, out + err


def test_the_operator_runs_every_verb_of_the_runbook(
    capsys: pytest.CaptureFixture[str], busy_hub: str, operator: LoginRole
) -> None:
    def ok(*argv: str) -> str:
        code, output = as_operator(capsys, operator, busy_hub, *argv)
        assert code == 0, (argv, output)
        assert "Traceback" not in output
        return output

    assert "no drift" in ok("check")
    ok("status")
    for view in ("queues", "leases", "poison", "dead-letters", "stuck", "instances"):
        ok("inspect", view)
    ok("inspect", "instance", "quiet")
    letters = json.loads(ok("inspect", "dead-letters", "--json"))
    ok("requeue", str(letters[0]["id"]))
    ok("release-lease", "leased-instance")
    ok("raise-event", "quiet", "Ping", '"hello"')
    ok("cancel", "quiet", "--yes")
    ok("delete-instance", "hot", "--yes")
    ok("prune", "--completed-before", "0s", "--yes")


def runbook_steps_for_operators() -> list[str]:
    """The psql steps of docs/ops.md before its deploy sections (those are the
    owner's and a superuser's)."""
    text = (REPO / "docs" / "ops.md").read_text()
    operating = text.split("## Deploying while the fleet runs")[0]
    return re.findall(r"```sql\n(.*?)```", operating, flags=re.S)


def test_the_operator_runs_the_runbooks_psql_steps(busy_hub: str, operator: LoginRole) -> None:
    steps = runbook_steps_for_operators()
    assert len(steps) >= 12
    with psycopg.connect(operator.url, autocommit=True) as conn:
        for step in steps:
            conn.execute(re.sub(r"\borders\b", f'"{busy_hub}"', step))


FORBIDDEN = [
    "SELECT * FROM {s}.fetch_orchestration_item(0, 30000)",
    "SELECT * FROM {s}.fetch_work_item(0, 30000)",
    "SELECT {s}.ack_worker('token', 'quiet', NULL)",
    "SELECT {s}.taskhub_grant_runtime_role('postgres')",
    "SELECT {s}.taskhub_record_definitions()",
    "SELECT {s}.cleanup_schema()",
    "INSERT INTO {s}.orchestrator_queue (instance_id, work_item, visible_at, created_at)"
    " VALUES ('x', '{{}}', now(), now())",
    "UPDATE {s}.instances SET orchestration_name = 'x'",
    "DELETE FROM {s}.history",
    "DELETE FROM {s}.dead_letters",
    "TRUNCATE {s}.worker_queue",
    "CREATE TABLE {s}.mine (id int)",
    "UPDATE {s}.taskhub_settings SET description = 'x'",
]


@pytest.mark.parametrize("statement", FORBIDDEN)
def test_the_operator_can_do_nothing_more(
    busy_hub: str, operator: LoginRole, statement: str
) -> None:
    with (
        psycopg.connect(operator.url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(statement.format(s=f'"{busy_hub}"'))


def test_revoking_takes_everything_back(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT "{busy_hub}".taskhub_revoke_operator_role(%s)', [operator.name]
        ).fetchone()
        assert row == (True,)
    with (
        psycopg.connect(operator.url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(f'SELECT * FROM "{busy_hub}".taskhub_queue_health')


def test_a_runtime_role_cannot_also_be_an_operator(database_url: str, hub_schema: str) -> None:
    with login_role(database_url) as role, psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            f'SELECT "{hub_schema}".taskhub_grant_runtime_role(%s, %s)', [role.name, "none"]
        )
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="runtime role"):
            conn.execute(f'SELECT "{hub_schema}".taskhub_grant_operator_role(%s)', [role.name])
        conn.execute(f'SELECT "{hub_schema}".taskhub_revoke_runtime_role(%s)', [role.name])
