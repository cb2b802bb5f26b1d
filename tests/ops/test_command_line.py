"""The runbook's verbs of `taskhub-pg` against a busy hub: each answers what
the views hold, in JSON for scripts, and refuses with an exit code a pipeline
can branch on (3 not found, 5 not confirmed, 1 refused, 4 unreachable)."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from provider.cli import main


class Cli:
    def __init__(self, capsys: pytest.CaptureFixture[str], url: str, schema: str) -> None:
        self.capsys, self.url, self.schema = capsys, url, schema

    def __call__(self, *argv: str) -> tuple[int, str]:
        self.capsys.readouterr()
        code = main([*argv, "--url", self.url, "--schema", self.schema])
        return code, self.capsys.readouterr().out

    def json(self, *argv: str) -> Any:
        code, out = self(*argv, "--json")
        assert code == 0, out
        return json.loads(out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], database_url: str, busy_hub: str) -> Cli:
    return Cli(capsys, database_url, busy_hub)


def count(sql: psycopg.Connection[Any], query: str) -> int:
    row = sql.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def test_inspect_answers_what_the_views_hold(cli: Cli, sql: psycopg.Connection[Any]) -> None:
    queues = {row["queue"]: row for row in cli.json("inspect", "queues")}
    assert set(queues) == {"orchestrator", "worker"}
    ready = count(
        sql,
        f'SELECT count(*) FROM "{cli.schema}".orchestrator_queue'
        " WHERE lock_token IS NULL AND visible_at <= now()",
    )
    assert queues["orchestrator"]["ready"] == ready
    assert queues["orchestrator"]["dead_letters"] == 1
    assert queues["worker"]["leased"] == 1

    leases = {(row["kind"], row["instance_id"]) for row in cli.json("inspect", "leases")}
    assert leases == {("orchestration", "leased-instance"), ("activity", "leased-instance")}
    poison = cli.json("inspect", "poison")
    assert [(row["instance_id"], row["attempt_count"]) for row in poison] == [("hot", 42)]
    letters = cli.json("inspect", "dead-letters")
    assert [row["instance_id"] for row in letters] == ["stuck-instance"]
    assert [row["instance_id"] for row in cli.json("inspect", "stuck")] == ["quiet"]

    quiet = cli.json("inspect", "instance", "quiet")
    assert quiet["instance"]["orchestration_name"] == "TestOrch"
    assert [e["status"] for e in quiet["executions"]] == ["Running"]

    code, table = cli("inspect", "queues")
    assert code == 0 and "queues" in table and "worker" in table


def test_inspecting_an_unknown_instance_exits_3(cli: Cli) -> None:
    assert cli("inspect", "instance", "nobody")[0] == 3


def test_requeue_puts_a_dead_letter_back_once(cli: Cli, sql: psycopg.Connection[Any]) -> None:
    (letter,) = cli.json("inspect", "dead-letters")
    done = cli.json("requeue", str(letter["id"]))
    assert done["dead_letter_id"] == letter["id"] and done["queued_as"] > 0
    assert count(sql, f'SELECT count(*) FROM "{cli.schema}".dead_letters') == 0
    assert cli("requeue", str(letter["id"]))[0] == 3


def test_release_lease_frees_the_turn_once(cli: Cli, sql: psycopg.Connection[Any]) -> None:
    assert cli.json("release-lease", "leased-instance") == {
        "instance_id": "leased-instance",
        "released": True,
    }
    assert count(sql, f'SELECT count(*) FROM "{cli.schema}".instance_locks') == 0
    assert cli("release-lease", "leased-instance")[0] == 3


def test_delete_instance_asks_refuses_a_running_one_and_deletes_with_force(
    cli: Cli, sql: psycopg.Connection[Any]
) -> None:
    instances = f"SELECT count(*) FROM \"{cli.schema}\".instances WHERE instance_id = 'quiet'"
    assert cli("delete-instance", "quiet")[0] == 5  # no tty, no --yes: not confirmed
    assert count(sql, instances) == 1
    cli.capsys.readouterr()
    code = main(["delete-instance", "quiet", "--yes", "--url", cli.url, "--schema", cli.schema])
    said = cli.capsys.readouterr().err
    assert code == 1 and count(sql, instances) == 1  # it runs: refused without --force
    assert "Add --force to delete it while it runs." in said and "force=true" not in said
    deleted = cli.json("delete-instance", "quiet", "--yes", "--force")
    assert deleted["instances_deleted"] == 1 and count(sql, instances) == 0
    assert cli("delete-instance", "quiet", "--yes")[0] == 3


def test_prune_deletes_only_what_ended_before_the_cutoff(
    cli: Cli, sql: psycopg.Connection[Any]
) -> None:
    sql.execute(
        f"UPDATE \"{cli.schema}\".executions SET status = 'Completed',"
        " completed_at = now() - interval '2 days' WHERE instance_id = 'quiet'"
    )
    sql.execute(  # and, as every instance that ended then, created before that
        f"UPDATE \"{cli.schema}\".instances SET created_at = now() - interval '3 days'"
        " WHERE instance_id = 'quiet'"
    )
    sql.execute(  # one that ended a minute ago
        f'INSERT INTO "{cli.schema}".instances (instance_id, orchestration_name, created_at,'
        " updated_at) VALUES ('recent', 'TestOrch', now(), now());"
        f' INSERT INTO "{cli.schema}".executions (instance_id, execution_id, status, started_at,'
        " completed_at) VALUES ('recent', 1, 'Completed', now(), now() - interval '1 minute')"
    )
    assert cli("prune", "--completed-before", "3d", "--json")[0] == 0  # nothing that old
    assert cli("prune", "--completed-before", "1d")[0] == 5  # asks first
    assert cli.json("prune", "--completed-before", "1d", "--yes")["instances_deleted"] == 1
    left = sql.execute(f'SELECT instance_id FROM "{cli.schema}".instances').fetchall()
    assert left == [("recent",)]
    assert cli("prune", "--completed-before", "yesterday-ish")[0] == 2


def test_bad_arguments_and_an_unreachable_database_have_their_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", "queues", "--url", "postgresql://x@127.0.0.1:1/x"]) == 4
    assert main(["inspect", "queues", "--url", "postgresql://x@h/x", "--schema", "pg_x"]) == 2
    assert main(["no-such-verb"]) == 2
