"""What an event left behind, read on the new primary once the work it
started has settled: every acknowledged start completed correctly, failed,
stuck or lost (and whether the replication lag explains the loss), the
activities that ran more than once, and how soon work flowed again."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import psycopg

from devkit.waiting import wait_until
from drills.failover.application import StartRecord
from drills.failover.events import EventRecord
from drills.failover.servers import ServerPair
from drills.failover.wal import lsn_text
from drills.failover.workload import expected_output

MESSAGE_CHARS = 160

# How a lost start's commit stands against what the standby had received.
AFTER = "after what the standby had received: explained"
STRADDLES = "in flight while the standby's position was reached: may be explained"
BEFORE = "before what the standby had received: NOT explained"
UNKNOWN = "position unknown: NOT explained"


@dataclass(frozen=True)
class LostStart:
    record: StartRecord
    received: int

    @property
    def verdict(self) -> str:
        before, after = self.record.lsn_before, self.record.lsn_after
        if before is not None and before >= self.received:
            return AFTER
        if after is not None and after <= self.received:
            return BEFORE
        if before is None and after is None:
            return UNKNOWN
        return STRADDLES

    @property
    def explained(self) -> bool:
        return self.verdict in (AFTER, STRADDLES)

    def line(self) -> str:
        def show(position: int | None) -> str:
            return "?" if position is None else lsn_text(position)

        return (
            f"{self.record.instance}: commit between {show(self.record.lsn_before)} and"
            f" {show(self.record.lsn_after)}, the standby had {lsn_text(self.received)}:"
            f" {self.verdict}"
        )


@dataclass
class WorkerDelta:
    """Our worker's statistics over the event."""

    leases_lost: int = 0
    renewals: int = 0
    renewal_errors: int = 0


@dataclass
class EventOutcome:
    event: EventRecord
    starts: int = 0  # asked for
    acknowledged: int = 0
    repeated: int = 0  # acknowledged after one RetryableError or more
    repeated_existing: int = 0  # ... and the repeat found the instance there
    given_up: list[str] = field(default_factory=list)  # never acknowledged, and why
    completed: int = 0  # with the expected output
    wrong: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)
    lost: list[LostStart] = field(default_factory=list)
    reruns: Counter[str] = field(default_factory=Counter)  # activity -> instances re-run
    rerun_examples: list[str] = field(default_factory=list)
    worker: WorkerDelta = field(default_factory=WorkerDelta)
    # From the event to the first start acknowledged, the first order
    # completed, once the old primary had stopped (so by the new one).
    first_ack_after_s: float | None = None
    first_completion_after_s: float | None = None
    runtime_problems: list[str] = field(default_factory=list)
    worker_problems: list[str] = field(default_factory=list)
    settled: bool = True


def settle(pair: ServerPair, schema: str, prefix: str, timeout_s: float) -> bool:
    """Wait until nothing the event started is still running or queued;
    False when it did not happen within timeout_s (what is left is stuck)."""

    def left() -> bool:
        with pair.connect(pair.primary) as conn:
            row = conn.execute(
                f"""
                SELECT (SELECT count(*)
                          FROM "{schema}".executions
                         WHERE instance_id LIKE %(prefix)s
                           AND status NOT IN ('Completed', 'Failed'))
                     + (SELECT count(*)
                          FROM "{schema}".orchestrator_queue
                         WHERE instance_id LIKE %(prefix)s)
                """,
                {"prefix": f"{prefix}-%"},
            ).fetchone()
        return row is not None and row[0] == 0

    try:
        wait_until(left, timeout_s=timeout_s, interval_s=0.25, ignoring=(psycopg.OperationalError,))
    except AssertionError:
        return False
    return True


def read_outcome(
    pair: ServerPair,
    schema: str,
    event: EventRecord,
    records: dict[str, StartRecord],
    executions: Counter[tuple[str, str]],
) -> EventOutcome:
    outcome = EventOutcome(event, starts=len(records))
    with pair.connect(pair.primary) as conn:
        ends = _ends(conn, schema, list(records))
        queued = _queued(conn, schema, list(records))
        first_completion = _first_completion_after(conn, schema, event.stopped_at)
    for record in records.values():
        if not record.acknowledged:
            outcome.given_up.append(f"{record.instance}: {record.last_error}")
            continue
        outcome.acknowledged += 1
        if record.retryable_errors:
            outcome.repeated += 1
            outcome.repeated_existing += record.created is False
        _judge(outcome, record, ends, queued)
    acknowledged = [r.acknowledged_at for r in records.values() if r.acknowledged_at is not None]
    after = [at - event.began_at for at in acknowledged if at > event.stopped_at]
    outcome.first_ack_after_s = min(after, default=None)
    if first_completion is not None:
        outcome.first_completion_after_s = first_completion - event.began_at
    for (activity, instance), runs in sorted(executions.items()):
        if instance in records and runs > 1:
            outcome.reruns[activity] += 1
            if len(outcome.rerun_examples) < 5:
                outcome.rerun_examples.append(f"{activity} of {instance} ran {runs} times")
    return outcome


def _judge(
    outcome: EventOutcome,
    record: StartRecord,
    ends: dict[str, tuple[str, str | None]],
    queued: set[str],
) -> None:
    end = ends.get(record.instance)
    if end is None:
        if record.instance in queued:
            outcome.stuck.append(f"{record.instance}: its start is still queued")
        else:
            outcome.lost.append(LostStart(record, outcome.event.received))
        return
    status, output = end
    if status == "Completed":
        if _parsed(output) == expected_output(record.instance):
            outcome.completed += 1
        else:
            outcome.wrong.append(f"{record.instance} returned {output!r}"[:MESSAGE_CHARS])
    elif status == "Failed":
        outcome.failed.append(f"{record.instance}: {output}"[:MESSAGE_CHARS])
    else:
        outcome.stuck.append(f"{record.instance} is {status}")


def _parsed(output: str | None) -> Any:
    try:
        return json.loads(output) if output is not None else None
    except json.JSONDecodeError:
        return output


def _ends(
    conn: psycopg.Connection[Any], schema: str, instances: list[str]
) -> dict[str, tuple[str, str | None]]:
    """instance -> (status, output) of its current execution ('Pending': none yet)."""
    rows = conn.execute(
        f"""
        SELECT i.instance_id, coalesce(e.status, 'Pending'), e.output
          FROM "{schema}".instances AS i
          LEFT JOIN "{schema}".executions AS e
            ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
         WHERE i.instance_id = ANY(%s)
        """,
        [instances],
    ).fetchall()
    return {str(instance): (str(status), output) for instance, status, output in rows}


def _queued(conn: psycopg.Connection[Any], schema: str, instances: list[str]) -> set[str]:
    rows = conn.execute(
        f'SELECT DISTINCT instance_id FROM "{schema}".orchestrator_queue'
        " WHERE instance_id = ANY(%s)",
        [instances],
    ).fetchall()
    return {str(row[0]) for row in rows}


def _first_completion_after(
    conn: psycopg.Connection[Any], schema: str, since: float
) -> float | None:
    row = conn.execute(
        f"""
        SELECT extract(epoch FROM min(completed_at))::float8
          FROM "{schema}".executions
         WHERE status = 'Completed' AND completed_at > to_timestamp(%s)
        """,
        [since],
    ).fetchone()
    return None if row is None or row[0] is None else float(row[0])
