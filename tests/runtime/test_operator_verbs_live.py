"""The operator's instance verbs against the released duroxide 0.2.2 runtime,
logged in as the operator role the runbook creates: an instance whose
orchestration the runtime has not registered is found (and deleted), a
running one is cancelled, a waiting one gets its event."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.roles import LoginRole, login_role
from devkit.waiting import wait_until
from provider.cli import main
from provider.deploy import migrate
from tests.support.db import new_schema_name

WAIT_MS = 30_000


@dataclass
class LiveHub:
    client: Any
    schema: str
    operator: LoginRole


@pytest.fixture(scope="module")
def live(database_url: str) -> Iterator[LiveHub]:
    schema = new_schema_name("live")
    migrate.upgrade(database_url, schema)
    provider = duroxide.PostgresProvider.connect_with_schema(database_url, schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10, orchestration_concurrency=2),
    )

    @runtime.register_orchestration("WaitForApproval")
    def wait_for_approval(ctx: Any, _: Any) -> Any:
        ctx.set_custom_status("waiting")
        approval = yield ctx.wait_for_event("Approve")
        return approval

    runtime.start()
    with login_role(database_url, prefix="operator") as operator:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f'SELECT "{schema}".taskhub_grant_operator_role(%s)', [operator.name])
        try:
            yield LiveHub(duroxide.Client(provider), schema, operator)
        finally:
            runtime.shutdown(timeout_ms=2_000)


def operator_cli(capsys: pytest.CaptureFixture[str], live: LiveHub, *argv: str) -> Any:
    capsys.readouterr()
    code = main([*argv, "--url", live.operator.url, "--schema", live.schema, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, (argv, err)
    return json.loads(out)


def test_an_unregistered_orchestrations_instance_is_found(
    capsys: pytest.CaptureFixture[str], live: LiveHub
) -> None:
    live.client.start_orchestration("ghost-1", "NeverRegistered", None)

    def given_back() -> Any:
        """The instance, once the runtime took the start, found no handler, gave it back."""
        ghost = operator_cli(capsys, live, "inspect", "instance", "ghost-1")["instance"]
        return ghost if (ghost["max_attempt_count"] or 0) >= 1 else None

    ghost = wait_until(given_back, timeout_s=WAIT_MS / 1000, interval_s=0.05)
    assert (ghost["status"], ghost["orchestration_name"]) == ("Pending", "NeverRegistered")
    assert ghost["max_attempt_count"] >= 1
    assert "is orchestration 'NeverRegistered' registered" in ghost["note"]
    pending = operator_cli(capsys, live, "inspect", "instances", "--status", "Pending")
    assert [row["instance_id"] for row in pending["instances"]] == ["ghost-1"]

    deleted = operator_cli(capsys, live, "delete-instance", "ghost-1", "--yes")
    assert deleted["queue_messages_deleted"] == 1
    capsys.readouterr()
    code = main(
        ["inspect", "instance", "ghost-1", "--url", live.operator.url, "--schema", live.schema]
    )
    assert code == 3


def test_cancel_ends_a_running_instance(capsys: pytest.CaptureFixture[str], live: LiveHub) -> None:
    live.client.start_orchestration("cancel-1", "WaitForApproval", None)
    live.client.wait_for_status_change("cancel-1", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    operator_cli(capsys, live, "cancel", "cancel-1", "--yes", "--reason", "duplicate order")
    result = live.client.wait_for_orchestration("cancel-1", WAIT_MS)
    assert result.status == "Failed"
    assert "duplicate order" in str(result.error)
    found = operator_cli(capsys, live, "inspect", "instances", "--status", "Failed")
    assert "cancel-1" in [row["instance_id"] for row in found["instances"]]


def test_raise_event_reaches_the_waiting_orchestration(
    capsys: pytest.CaptureFixture[str], live: LiveHub
) -> None:
    live.client.start_orchestration("approve-1", "WaitForApproval", None)
    live.client.wait_for_status_change("approve-1", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    operator_cli(capsys, live, "raise-event", "approve-1", "Approve", '{"by": "ops"}')
    result = live.client.wait_for_orchestration("approve-1", WAIT_MS)
    assert (result.status, result.output) == ("Completed", {"by": "ops"})


def operator_exit(capsys: pytest.CaptureFixture[str], live: LiveHub, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*argv, "--url", live.operator.url, "--schema", live.schema])
    out, err = capsys.readouterr()
    # The operator's URL carries its password: the CLI warns of it first.
    said = [line for line in (out + err).splitlines() if "--url carries a password" not in line]
    return code, " ".join(" ".join(said).split())


def queued_for(live: LiveHub, database_url: str, instance_id: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            f'SELECT count(*) FROM "{live.schema}".orchestrator_queue WHERE instance_id = %s',
            [instance_id],
        ).fetchone()
    return int(row[0]) if row else -1


def test_the_hub_refuses_a_message_for_an_unknown_or_ended_instance(
    capsys: pytest.CaptureFixture[str], live: LiveHub, database_url: str
) -> None:
    """As the command line refused before the hub built the messages: no such
    instance is exit 3, an ended one exit 1, and nothing is queued."""
    code, said = operator_exit(capsys, live, "cancel", "nobody-1", "--yes")
    assert (code, said) == (3, "taskhub-pg: instance nobody-1 not found")
    code, said = operator_exit(capsys, live, "raise-event", "nobody-1", "Approve")
    assert (code, said) == (3, "taskhub-pg: instance nobody-1 not found")

    live.client.start_orchestration("approved-1", "WaitForApproval", None)
    live.client.wait_for_status_change("approved-1", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    operator_cli(capsys, live, "raise-event", "approved-1", "Approve", "true")
    assert live.client.wait_for_orchestration("approved-1", WAIT_MS).status == "Completed"
    code, said = operator_exit(capsys, live, "raise-event", "approved-1", "Approve", "true")
    assert code == 1 and "instance approved-1 already ended (Completed)" in said, said
    code, said = operator_exit(capsys, live, "cancel", "approved-1", "--yes")
    assert code == 1 and "instance approved-1 already ended (Completed)" in said, said
    assert queued_for(live, database_url, "approved-1") == 0
    assert queued_for(live, database_url, "nobody-1") == 0
