"""The runbook's reads and actions are plans like the runtime's
(provider/client/operator_plans.py): TaskHub, AsyncTaskHub and a connection
the caller holds (OnConnection, the command line's and the metrics') run the
same plan to the same rows and the same typed refusals."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from provider import AsyncTaskHub, InstanceEnded, InstanceNotFound, TaskHub
from provider.client.hub_views import UPKEEP_TABLES
from provider.client.on_connection import OnConnection
from provider.client.operator_plans import OperatorPlans
from provider.client.plans import Plan
from provider.errors import DeadLetterNotFound, NoLeaseHeld, TaskHubError
from provider.hub_rows import DeadLetter, InstanceRow, PendingInstance, plain
from tests.support.busy_hub import make_busy
from tests.support.failed_instance import failed_order

# What changes from one read to the next: the clock's part of a row.
MOVING = {"remaining_ms", "quiet_for", "oldest_ready_age_ms"}
Reads = dict[str, Callable[[OperatorPlans], Plan[Any]]]
READS: Reads = {
    "queues": lambda p: p.read_view("queues"),
    "leases": lambda p: p.read_view("leases"),
    "poison": lambda p: p.read_view("poison", 10),
    "dead-letters": lambda p: p.read_view("dead-letters"),
    "stuck": lambda p: p.read_view("stuck"),
    "shielded": lambda p: p.read_view("shielded"),
    "lease_counts": lambda p: p.lease_counts(),
    "count_rows": lambda p: p.count_rows("poison"),
    "status_counts": lambda p: p.status_counts(),
    "completions": lambda p: p.completions_per_minute(5),
    "quiet": lambda p: p.read_instance("quiet"),
    "hot": lambda p: p.read_instance("hot"),
    "stuck-instance": lambda p: p.read_instance("stuck-instance"),
    "refund": lambda p: p.read_instance("refund-1"),
    "history": lambda p: p.history_of("refund-1"),
    "kv": lambda p: p.kv_of("quiet"),
    "children": lambda p: p.children_of("quiet"),
    "trace": lambda p: p.trace_id_of("quiet"),
    "exists": lambda p: p.instance_exists("hot"),
    "not there": lambda p: p.instance_exists("nobody"),
    "status": lambda p: p.instance_status("hot"),
    "messages": lambda p: p.orchestrator_messages("hot"),
    "executable": lambda p: p.executable(["taskhub_requeue_dead_letter", "no_such_function"]),
    "schedules": lambda p: p.schedule_listing(),
    "prune count": lambda p: p.count_prune_candidates(4_102_444_800_000, 10),
    "tables": lambda p: p.table_upkeep(),
}
REFUSALS: dict[str, tuple[Callable[[OperatorPlans], Plan[Any]], type[TaskHubError]]] = {
    "requeue": (lambda p: p.requeue_dead_letter(999_999), DeadLetterNotFound),
    "release": (lambda p: p.release_lease("quiet"), NoLeaseHeld),
    "release activities": (lambda p: p.release_activity_leases("quiet"), NoLeaseHeld),
    "cancel nobody": (lambda p: p.cancel("nobody"), InstanceNotFound),
    "cancel ended": (lambda p: p.cancel("refund-1"), InstanceEnded),
    "event ended": (lambda p: p.raise_event("refund-1", "Approve"), InstanceEnded),
    "inspect nobody": (lambda p: p.read_instance("nobody"), InstanceNotFound),
}


def steady(value: Any) -> Any:
    """A result as plain values, without the clock's part."""
    shown = plain(value)
    if isinstance(shown, dict):
        return {key: steady(item) for key, item in shown.items() if key not in MOVING}
    if isinstance(shown, list):
        return [steady(item) for item in shown]
    return shown


def read_all(run: Callable[[Plan[Any]], Any], plans: OperatorPlans) -> dict[str, Any]:
    found = {name: steady(run(read(plans))) for name, read in READS.items()}
    found["tables"] = [table["table_name"] for table in found["tables"]]  # statistics move
    return found


def refused_all(run: Callable[[Plan[Any]], Any], plans: OperatorPlans) -> dict[str, str]:
    refused = {}
    for name, (act, kind) in REFUSALS.items():
        with pytest.raises(kind) as raised:
            run(act(plans))
        refused[name] = raised.value.message
    return refused


def on_the_loop(database_url: str, schema: str, plans: OperatorPlans) -> tuple[Any, Any]:
    async def both() -> tuple[Any, Any]:
        async with AsyncTaskHub.connect(database_url, schema) as hub:
            found: dict[str, Any] = {}
            for name, read in READS.items():
                found[name] = steady(await hub.run(read(plans)))
            found["tables"] = [table["table_name"] for table in found["tables"]]
            refused = {}
            for name, (act, kind) in REFUSALS.items():
                with pytest.raises(kind) as raised:
                    await hub.run(act(plans))
                refused[name] = raised.value.message
            return found, refused

    return asyncio.run(both())


def test_every_runner_reads_the_same_rows_and_refuses_alike(
    database_url: str, hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    failed_order(hub, "refund-1")
    make_busy(hub, hub_schema, sql)
    plans = OperatorPlans(hub.config)
    blocking = read_all(hub.run, plans), refused_all(hub.run, plans)
    held = OnConnection(sql, hub_schema)
    on_a_connection = read_all(held.run, held.plans), refused_all(held.run, held.plans)
    assert on_a_connection == blocking
    assert on_the_loop(database_url, hub_schema, plans) == blocking

    found, refused = blocking
    assert [row["queue"] for row in found["queues"]] == ["orchestrator", "worker"]
    assert [row["instance_id"] for row in found["poison"]] == ["hot"]
    assert found["status"] == "Pending" and found["exists"] and not found["not there"]
    assert found["hot"]["instance"]["note"] == (
        "not started: its start was handed out 42 times and given back;"
        " is orchestration 'TestOrch' registered with a runtime on this hub?"
    )
    assert [step["attempts"] for step in found["refund"]["failure"]["failed_steps"]] == [2, 2]
    assert found["executable"] == {"taskhub_requeue_dead_letter"}
    assert found["tables"] == list(UPKEEP_TABLES)
    assert found["schedules"] == {"schedules": [], "counts_failures": True}
    assert refused["requeue"] == "dead letter 999999 not found"
    assert refused["release"] == "instance quiet holds no orchestration lease"


def test_the_rows_are_typed(hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> None:
    make_busy(hub, hub_schema, sql)
    plans = OperatorPlans(hub.config)
    (letter,) = hub.run(plans.read_view("dead-letters"))
    assert isinstance(letter, DeadLetter) and letter.instance_id == "stuck-instance"
    assert isinstance(hub.run(plans.read_instance("quiet")).instance, InstanceRow)
    pending = hub.run(plans.read_instance("stuck-instance")).instance
    assert isinstance(pending, PendingInstance) and pending.dead_letters == 1
    assert pending.note.startswith("not started: its messages are in the dead letters")


def test_each_action_acts_once(hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> None:
    make_busy(hub, hub_schema, sql)
    plans = OperatorPlans(hub.config)
    (letter,) = hub.run(plans.read_view("dead-letters"))
    assert isinstance(letter, DeadLetter)
    assert hub.run(plans.requeue_dead_letter(letter.id)) > 0
    with pytest.raises(DeadLetterNotFound):
        hub.run(plans.requeue_dead_letter(letter.id))
    assert hub.run(plans.release_activity_leases("leased-instance")) == 1
    hub.run(plans.release_lease("leased-instance"))
    with pytest.raises(NoLeaseHeld, match="holds no orchestration lease"):
        hub.run(plans.release_lease("leased-instance"))
    assert hub.run(plans.cancel("quiet", "by a test")) == "Running"
    assert hub.run(plans.raise_event("quiet", "Approve", {"by": "ops"})) == "Running"
    kinds = [next(iter(item)) for item in hub.run(plans.orchestrator_messages("quiet"))]
    assert kinds == ["CancelInstance", "ExternalRaised"]


def test_a_count_that_would_wait_is_none_on_a_pool_too(
    database_url: str, hub: TaskHub, hub_schema: str
) -> None:
    """The plan handles the step's timeout (it is raised at its yield)."""
    plans = OperatorPlans(hub.config)
    with psycopg.connect(database_url) as holder:
        holder.execute(f'LOCK TABLE "{hub_schema}".executions IN ACCESS EXCLUSIVE MODE')
        assert hub.run(plans.status_counts(timeout_ms=200)) is None
    assert hub.run(plans.status_counts(timeout_ms=200)) == {"Pending": 0}
