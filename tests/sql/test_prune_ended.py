"""Retention in bounded batches (taskhub_prune_ended, TaskHub.prune_ended):
a batch deletes at most its size of ended roots, oldest first, each with its
whole tree and everything it owns; running instances and those that ended
after the cutoff stay; and it waits for nobody: a root, a descendant, a lease
or a fetch another session holds is skipped (its tree left whole for a later
batch), two pruners share the backlog. Bad input deletes nothing."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import activity_execute
from provider import InvalidInput, LockLost, PrunedBatch, TaskHub, now_ms
from tests.support.db import open_transaction
from tests.validation.harness import create_instance, finish_instance

# Every table that holds rows of an instance.
OWNED = (
    "instances",
    "executions",
    "history",
    "orchestrator_queue",
    "worker_queue",
    "instance_locks",
    "kv_store",
    "kv_delta",
    "taskhub_trace_contexts",
)


def rows_of(sql: psycopg.Connection[Any], schema: str, instance_id: str) -> dict[str, int]:
    """How many rows each table holds for the instance (tables without any left out)."""
    counts = {}
    for table in OWNED:
        row = sql.execute(
            f'SELECT count(*) FROM "{schema}".{table} WHERE instance_id = %s', [instance_id]
        ).fetchone()
        if row and row[0]:
            counts[table] = int(row[0])
    return counts


def instances(sql: psycopg.Connection[Any], schema: str) -> set[str]:
    return {
        str(instance_id)
        for (instance_id,) in sql.execute(f'SELECT instance_id FROM "{schema}".instances')
    }


def tick() -> None:
    """The clock moves on (created_at and completed_at are ms apart)."""
    time.sleep(0.005)


@pytest.fixture
def pruner(hub_schema: str, make_hub: Callable[..., TaskHub]) -> TaskHub:
    """A second client: its calls would fail after 3 s instead of waiting on a lock."""
    return make_hub(hub_schema, statement_timeout_ms=3_000)


def test_a_batch_is_bounded_oldest_first_and_takes_whole_trees(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    s = f'"{hub_schema}"'
    finish_instance(hub, "busy-old", "Completed", '"x"')  # ended, then started again below
    create_instance(hub, "running-old")
    tick()
    finish_instance(hub, "r0", "Completed", '"ok"')
    tick()
    finish_instance(hub, "r1", "Failed", '"boom"')
    finish_instance(hub, "r1-child", "Completed", '"ok"', parent="r1")
    create_instance(hub, "r1-grandchild")  # still running: it goes with its ended root
    sql.execute(
        f"UPDATE {s}.instances SET parent_instance_id = 'r1-child'"
        " WHERE instance_id = 'r1-grandchild'"
    )
    tick()
    finish_instance(hub, "r2", "ContinuedAsNew", "null")
    tick()
    finish_instance(hub, "r3", "Completed", '"ok"')
    # What else an instance owns: KV state, a trace context (a late message below).
    sql.execute(
        f"INSERT INTO {s}.kv_store (instance_id, key, value, execution_id)"
        " VALUES ('r2', 'k', 'v', 1);"
        f" INSERT INTO {s}.kv_delta (instance_id, key, value, last_updated_at_ms)"
        " VALUES ('r2', 'k', 'v', 1);"
        f" INSERT INTO {s}.taskhub_trace_contexts (instance_id, traceparent)"
        " VALUES ('r2', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')"
    )
    # "busy-old" runs again (its current execution is Running): it stays.
    sql.execute(
        f"UPDATE {s}.executions SET status = 'Running', completed_at = NULL"
        " WHERE instance_id = 'busy-old'"
    )
    tick()
    cutoff = now_ms()
    tick()
    finish_instance(hub, "late", "Completed", '"ok"')  # ended after the cutoff
    hub.raise_event("r2", "Late", {"n": 1})
    hub.enqueue_worker_work(activity_execute("r3", 1))  # an activity still queued
    owned_by_r2 = rows_of(sql, hub_schema, "r2")
    assert set(owned_by_r2) == {
        "instances",
        "executions",
        "history",
        "orchestrator_queue",
        "kv_store",
        "kv_delta",
        "taskhub_trace_contexts",
    }

    first = hub.prune_ended(cutoff, batch_size=2)
    # r0, and r1 with its child and grandchild: the two oldest roots, whole.
    assert first == PrunedBatch(
        roots_deleted=2,
        instances_deleted=4,
        executions_deleted=4,
        events_deleted=4,
        queue_messages_deleted=0,
    )
    assert instances(sql, hub_schema) == {"busy-old", "running-old", "r2", "r3", "late"}

    second = hub.prune_ended(cutoff, batch_size=2)
    assert (second.roots_deleted, second.instances_deleted) == (2, 2)
    assert second.queue_messages_deleted == 2  # r2's late message, r3's activity
    assert hub.prune_ended(cutoff, batch_size=2) == PrunedBatch()
    assert instances(sql, hub_schema) == {"busy-old", "running-old", "late"}
    for gone in ("r0", "r1", "r1-child", "r1-grandchild", "r2", "r3"):
        assert rows_of(sql, hub_schema, gone) == {}, gone
    assert rows_of(sql, hub_schema, "late")["history"] == 1


def test_a_root_held_by_another_session_is_skipped_not_waited_for(
    hub: TaskHub, pruner: TaskHub, hub_schema: str, database_url: str
) -> None:
    for n in range(3):
        finish_instance(hub, f"r{n}", "Completed", '"ok"')
        tick()
    cutoff = now_ms()
    with open_transaction(database_url) as other:
        # The oldest candidate's row, held (by a delete, another pruner, an ack).
        other.execute(
            f"SELECT 1 FROM \"{hub_schema}\".instances WHERE instance_id = 'r0' FOR UPDATE"
        )
        started = time.monotonic()
        batch = pruner.prune_ended(cutoff, batch_size=10)
        assert time.monotonic() - started < 1.0
        assert batch.roots_deleted == 2
    assert pruner.prune_ended(cutoff, batch_size=10).roots_deleted == 1  # r0, now free


def test_a_tree_with_a_descendant_held_elsewhere_is_left_whole(
    hub: TaskHub, pruner: TaskHub, hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    finish_instance(hub, "root", "Completed", '"ok"')
    finish_instance(hub, "child", "Completed", '"ok"', parent="root")
    finish_instance(hub, "alone", "Completed", '"ok"')
    tick()
    cutoff = now_ms()
    with open_transaction(database_url) as other:
        other.execute(
            f"SELECT 1 FROM \"{hub_schema}\".instances WHERE instance_id = 'child' FOR UPDATE"
        )
        batch = pruner.prune_ended(cutoff, batch_size=10)
        assert (batch.roots_deleted, batch.instances_deleted) == (1, 1)  # "alone"
        assert instances(sql, hub_schema) == {"root", "child"}
    assert pruner.prune_ended(cutoff, batch_size=10).instances_deleted == 2


def test_a_lease_being_committed_or_a_fetch_under_way_is_skipped_not_waited_for(
    hub: TaskHub, pruner: TaskHub, hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    s = f'"{hub_schema}"'
    for name in ("acked", "fetched", "alone"):
        finish_instance(hub, name, "Completed", '"ok"')
    tick()
    cutoff = now_ms()
    # A late message to an ended instance, leased: its runtime's turn is on.
    hub.raise_event("acked", "Late")
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None and turn.instance_id == "acked"
    hub.raise_event("fetched", "Late")
    with open_transaction(database_url) as acking, open_transaction(database_url) as fetching:
        # An ack committing holds the lease row; a fetch holds the instance's try-lock.
        acking.execute(f"SELECT 1 FROM {s}.instance_locks WHERE instance_id = 'acked' FOR UPDATE")
        fetching.execute(f"SELECT pg_advisory_xact_lock({s}.taskhub_instance_lock_key('fetched'))")
        started = time.monotonic()
        batch = pruner.prune_ended(cutoff, batch_size=10)
        assert time.monotonic() - started < 1.0
        assert batch.roots_deleted == 1
        assert instances(sql, hub_schema) == {"acked", "fetched"}
    # Free again: both go, the lease with its instance; the turn's ack is refused
    # and re-creates nothing.
    assert pruner.prune_ended(cutoff, batch_size=10).queue_messages_deleted == 2
    with pytest.raises(LockLost):
        hub.ack_orchestration_item(turn.lock_token, turn.execution_id)
    assert rows_of(sql, hub_schema, "acked") == {}


def test_two_pruners_share_the_backlog_without_waiting(
    hub: TaskHub, pruner: TaskHub, hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    for n in range(6):
        finish_instance(hub, f"r{n}", "Completed", '"ok"')
        tick()
    cutoff = now_ms()
    with psycopg.connect(database_url) as first:  # a pruner whose batch has not committed yet
        first.execute("SET statement_timeout = 3000")
        row = first.execute(
            f'SELECT roots_deleted FROM "{hub_schema}".taskhub_prune_ended(%s, 4)', [cutoff]
        ).fetchone()
        assert row == (4,)
        started = time.monotonic()
        second = pruner.prune_ended(cutoff, batch_size=10)
        assert time.monotonic() - started < 1.0
        assert second.roots_deleted == 2
        first.commit()
    assert instances(sql, hub_schema) == set()


@pytest.fixture
def ended_and_running(hub: TaskHub, hub_schema: str) -> Iterator[int]:
    finish_instance(hub, "ended", "Completed", '"ok"')
    create_instance(hub, "running")
    tick()
    yield now_ms()


BAD_INPUT = {
    "a NULL cutoff": (None, 500, "p_completed_before_ms must not be NULL"),
    "a negative batch size": ("cutoff", -1, "p_batch_size must be between 1 and 10000, not -1"),
    "a batch size of 0": ("cutoff", 0, "p_batch_size must be between 1 and 10000, not 0"),
    "no batch size": ("cutoff", None, "p_batch_size must be between 1 and 10000, not <NULL>"),
    "a batch too large": ("cutoff", 10_001, "p_batch_size must be between 1 and 10000"),
}


@pytest.mark.parametrize(("cutoff", "batch_size", "message"), BAD_INPUT.values(), ids=BAD_INPUT)
def test_bad_input_is_refused_clearly_and_deletes_nothing(
    ended_and_running: int,
    hub: TaskHub,
    hub_schema: str,
    sql: psycopg.Connection[Any],
    cutoff: int | str | None,
    batch_size: int | None,
    message: str,
) -> None:
    value = ended_and_running if cutoff == "cutoff" else cutoff
    with pytest.raises(psycopg.Error) as refused:
        sql.execute(
            f'SELECT * FROM "{hub_schema}".taskhub_prune_ended(%s, %s)', [value, batch_size]
        )
    assert refused.value.sqlstate == "22023"
    assert message in (refused.value.diag.message_primary or "")
    with pytest.raises(InvalidInput):  # the provider's own check, before any SQL
        hub.prune_ended(value, batch_size=batch_size)  # type: ignore[arg-type]
    assert instances(sql, hub_schema) == {"ended", "running"}
    assert hub.prune_ended(ended_and_running, batch_size=1).roots_deleted == 1  # and it works
