"""The rows an operator reads of a hub, typed: the runbook's views
(docs/ops.md), an instance's report, the upkeep of its tables. The client's
operator plans (provider/client/operator_plans.py) return them; the command
line, the dashboard and the metrics show them. Each field is a column of
the read, in the order the read selects it: `plain` turns a row into what
the command line prints as JSON and the dashboard's templates read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from provider.types import Restart, Schedule


@dataclass(frozen=True)
class QueueHealth:
    """taskhub_queue_health: a row per queue."""

    queue: str
    ready: int
    scheduled: int
    leased: int
    oldest_ready_age_ms: int | None  # None: nothing ready
    max_attempt_count: int
    dead_letters: int


@dataclass(frozen=True)
class Lease:
    """taskhub_current_leases: a lease held now (remaining_ms < 0: expired)."""

    kind: str  # orchestration or activity
    instance_id: str | None
    activity_id: int | None
    lock_token: str
    leased_since: datetime | None
    remaining_ms: int
    messages: int


@dataclass(frozen=True)
class PoisonCandidate:
    """taskhub_poison_candidates: a message handed out again and again."""

    queue: str
    id: int
    instance_id: str | None
    attempt_count: int
    lock_token: str | None
    created_at: datetime
    work_item_head: str


@dataclass(frozen=True)
class DeadLetter:
    """dead_letters: a message moved aside after too many deliveries."""

    id: int
    source_queue: str
    instance_id: str | None
    attempt_count: int
    reason: str
    dead_at: datetime
    original_created_at: datetime


@dataclass(frozen=True)
class StuckInstance:
    """taskhub_stuck_instances: running, with nothing queued or leased."""

    instance_id: str
    orchestration_name: str
    current_execution_id: int
    quiet_for: timedelta


@dataclass(frozen=True)
class ShieldedFailure:
    """shielded_failures: a transient failure given back (revision 0007)."""

    id: int
    instance_id: str
    execution_id: int
    operation: str
    condition: str
    message: str
    attempt_count: int
    retry_after_ms: int
    shielded_at: datetime


ViewRow = QueueHealth | Lease | PoisonCandidate | DeadLetter | StuckInstance | ShieldedFailure


@dataclass(frozen=True)
class TableUpkeep:
    """One of the tables to watch for upkeep (docs/ops.md, "Maintenance"),
    from PostgreSQL's statistics."""

    table_name: str
    total_bytes: int  # with indexes and TOAST
    live_rows: int
    dead_rows: int
    autovacuum_count: int
    since_autovacuum_s: int | None  # None: never
    hot_update_pct: int | None  # None: no update yet


@dataclass(frozen=True)
class Overview:
    """The hub at a glance: what the dashboard's first page shows."""

    queues: list[QueueHealth]
    leases: dict[tuple[str, bool], int]  # (kind, still live): how many
    poison: int
    stuck: int
    dead_letters: int
    shielded: int
    completions_per_minute: list[int]  # oldest minute first, the current one last
    tables: list[TableUpkeep]


@dataclass(frozen=True)
class InstanceRow:
    """An instance as its row in `instances` holds it."""

    instance_id: str
    orchestration_name: str
    orchestration_version: str | None
    current_execution_id: int
    created_at: datetime
    updated_at: datetime
    parent_instance_id: str | None
    custom_status: str | None
    custom_status_version: int


@dataclass(frozen=True)
class PendingInstance:
    """An instance known only by its messages (queued, or moved to the dead
    letters): what they say of it, and why it may not have started."""

    instance_id: str
    status: Literal["Pending"]
    orchestration_name: str | None
    orchestration_version: str | None
    queued_messages: int
    dead_letters: int
    max_attempt_count: int | None
    first_message_at: datetime | None
    note: str


@dataclass(frozen=True)
class ExecutionRow:
    execution_id: int
    status: str
    started_at: datetime
    completed_at: datetime | None


@dataclass(frozen=True)
class QueuedMessage:
    queue: str  # orchestrator or worker
    id: int
    visible_at: datetime
    attempt_count: int
    leased: bool
    work_item_head: str  # its first 120 characters


@dataclass(frozen=True)
class InstanceLease:
    kind: str
    activity_id: int | None
    lock_token: str
    leased_since: datetime | None
    remaining_ms: int


@dataclass(frozen=True)
class InstanceDeadLetter:
    id: int
    source_queue: str
    attempt_count: int
    reason: str
    dead_at: datetime


@dataclass(frozen=True)
class FailedStep:
    """An activity or sub-orchestration that failed on the way."""

    event_id: int
    kind: str  # ActivityFailed or SubOrchestrationFailed
    name: str | None  # from the event that scheduled it
    attempts: int  # how often that name was scheduled in the execution
    details: Any  # the error's details, as the runtime wrote them


@dataclass(frozen=True)
class InstanceFailure:
    """Why an instance failed: its current execution's error, and each step
    that failed on the way."""

    execution_id: int
    error: str | None
    details: Any
    failed_steps: list[FailedStep]


@dataclass(frozen=True)
class InstanceReport:
    instance: InstanceRow | PendingInstance
    executions: list[ExecutionRow]
    queued: list[QueuedMessage]
    leases: list[InstanceLease]
    dead_letters: list[InstanceDeadLetter]
    failure: InstanceFailure | None = None  # None unless its current execution failed
    # Its restarts, as the one restarted or the one restarted into (0029).
    restarts: list[Restart] = field(default_factory=list)


@dataclass(frozen=True)
class HistoryRow:
    """An event of an instance's history: its text whole up to 20,000
    characters (event_data None beyond), its first 400 in any case."""

    execution_id: int
    event_id: int
    event_type: str
    created_at: datetime
    event_head: str
    event_data: str | None


@dataclass(frozen=True)
class KvRow:
    key: str
    value: str  # its first 400 characters
    execution_id: int


@dataclass(frozen=True)
class ChildInstance:
    instance_id: str
    orchestration_name: str
    created_at: datetime


@dataclass(frozen=True)
class ScheduleListing:
    """Every schedule of a hub; `counts_failures` False on a hub before
    revision 0029, which counts no failed fires."""

    schedules: list[Schedule]
    counts_failures: bool


def json_value(value: Any) -> Any:
    """A value as JSON carries it: times as ISO 8601, intervals in seconds."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def plain(value: Any) -> Any:
    """A row (or a list or report of rows) as plain values: a dict per row,
    its fields in order, each value as JSON carries it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: plain(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, list):
        return [plain(item) for item in value]
    return json_value(value)
