"""Typed values passed to and returned by the provider."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast, get_args

from provider.errors import InvalidInput, PermanentError

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class KvEntry:
    value: str
    last_updated_at_ms: int


@dataclass(frozen=True)
class OrchestrationItem:
    """One leased orchestration turn: an instance with all its visible messages."""

    instance_id: str
    orchestration_name: str
    orchestration_version: str
    execution_id: int
    history: list[JsonObject]
    messages: list[JsonObject]
    lock_token: str
    attempt_count: int
    kv_snapshot: dict[str, KvEntry] = field(default_factory=dict)
    # Set when a stored history event is not valid JSON; history is then empty.
    history_error: str | None = None


@dataclass(frozen=True)
class WorkItemLease:
    """One leased worker item (an ActivityExecute work item)."""

    work_item: JsonObject
    lock_token: str
    attempt_count: int


@dataclass(frozen=True)
class TagFilter:
    """Which worker items a worker takes, by tag.

    `default_only` (untagged items), `tags` (items with one of `tags`),
    `default_and` (both), `any`, `none` (nothing).
    """

    mode: str = "default_only"
    tags: tuple[str, ...] = ()

    _MODES = ("default_only", "tags", "default_and", "any", "none")

    def __post_init__(self) -> None:
        if self.mode not in self._MODES:
            raise InvalidInput(
                "TagFilter", f"tag mode must be one of {self._MODES}, got {self.mode!r}"
            )
        if self.mode in ("tags", "default_and") and not self.tags:
            raise InvalidInput("TagFilter", f"tag mode {self.mode!r} needs at least one tag")
        for tag in self.tags:
            # An empty tag matches no item (untagged items have no tag, not ""):
            # a worker filtering on it would wait forever.
            if not isinstance(tag, str) or not tag:
                raise InvalidInput("TagFilter", f"a tag must be a non-empty text, got {tag!r}")

    @classmethod
    def default_only(cls) -> TagFilter:
        return cls("default_only")

    @classmethod
    def only(cls, *tags: str) -> TagFilter:
        return cls("tags", tuple(sorted(tags)))

    @classmethod
    def default_and(cls, *tags: str) -> TagFilter:
        return cls("default_and", tuple(sorted(tags)))

    @classmethod
    def any(cls) -> TagFilter:
        return cls("any")

    @classmethod
    def none(cls) -> TagFilter:
        return cls("none")


@dataclass(frozen=True)
class VersionRange:
    """Inclusive range of pinned runtime versions (major, minor, patch)."""

    minimum: tuple[int, int, int]
    maximum: tuple[int, int, int]

    @staticmethod
    def pack(version: tuple[int, int, int]) -> int:
        major, minor, patch = version
        return major * 1_000_000 + minor * 1_000 + patch


@dataclass(frozen=True)
class CustomStatus:
    status: str | None
    version: int


@dataclass(frozen=True)
class InstanceStats:
    history_event_count: int
    history_size_bytes: int
    queue_pending_count: int
    kv_user_key_count: int
    kv_total_value_bytes: int


@dataclass(frozen=True)
class InstanceInfo:
    instance_id: str
    orchestration_name: str
    orchestration_version: str
    current_execution_id: int
    created_at: datetime
    updated_at: datetime
    # The current execution's status; "Running" when it has no execution row yet.
    status: str
    output: str | None
    parent_instance_id: str | None


@dataclass(frozen=True)
class ExecutionInfo:
    execution_id: int
    status: str
    output: str | None
    started_at: datetime
    completed_at: datetime | None
    event_count: int


@dataclass(frozen=True)
class SystemMetrics:
    total_instances: int
    total_executions: int
    running_instances: int
    completed_instances: int
    failed_instances: int
    total_events: int


@dataclass(frozen=True)
class QueueDepths:
    orchestrator_queue: int
    worker_queue: int
    timer_queue: int = 0  # timers are orchestrator-queue messages with a future visible_at


@dataclass(frozen=True)
class DeleteResult:
    instances_deleted: int = 0
    executions_deleted: int = 0
    events_deleted: int = 0
    queue_messages_deleted: int = 0

    def __add__(self, other: DeleteResult) -> DeleteResult:
        return DeleteResult(
            self.instances_deleted + other.instances_deleted,
            self.executions_deleted + other.executions_deleted,
            self.events_deleted + other.events_deleted,
            self.queue_messages_deleted + other.queue_messages_deleted,
        )


@dataclass(frozen=True)
class PruneResult:
    instances_processed: int = 0
    executions_deleted: int = 0
    events_deleted: int = 0

    def __add__(self, other: PruneResult) -> PruneResult:
        return PruneResult(
            self.instances_processed + other.instances_processed,
            self.executions_deleted + other.executions_deleted,
            self.events_deleted + other.events_deleted,
        )


@dataclass(frozen=True)
class PrunedBatch:
    """What one batch of retention deleted (TaskHub.prune_ended); batches add up."""

    roots_deleted: int = 0
    instances_deleted: int = 0
    executions_deleted: int = 0
    events_deleted: int = 0
    queue_messages_deleted: int = 0

    def __add__(self, other: PrunedBatch) -> PrunedBatch:
        return PrunedBatch(
            self.roots_deleted + other.roots_deleted,
            self.instances_deleted + other.instances_deleted,
            self.executions_deleted + other.executions_deleted,
            self.events_deleted + other.events_deleted,
            self.queue_messages_deleted + other.queue_messages_deleted,
        )


@dataclass(frozen=True)
class InstanceTree:
    root_id: str
    all_ids: list[str]

    def is_root_only(self) -> bool:
        return self.all_ids == [self.root_id]

    def size(self) -> int:
        return len(self.all_ids)


@dataclass(frozen=True)
class InstanceSummary:
    """One instance as an operator finds it (TaskHub.find_instances).

    status "Pending": known only by its queued messages (a start no runtime
    has taken yet, or one whose orchestration no runtime has registered);
    it has no execution, and its times are its first and last message's.
    """

    instance_id: str
    orchestration_name: str | None
    orchestration_version: str | None
    status: str | None
    current_execution_id: int | None
    created_at: datetime
    updated_at: datetime
    parent_instance_id: str | None
    queued_messages: int
    # The most times one of its queued messages was handed out (None: none queued).
    max_attempt_count: int | None


# An instance's status: Pending (only its start is queued), Running, or the
# current execution's end (ContinuedAsNew: a next execution follows).
InstanceStatusName = Literal["Pending", "Running", "Completed", "Failed", "ContinuedAsNew"]
# What TaskHub.find_instances can filter on.
INSTANCE_STATUSES: tuple[InstanceStatusName, ...] = (
    "Running",
    "Completed",
    "Failed",
    "ContinuedAsNew",
    "Pending",
)
ENDED_STATUSES: tuple[InstanceStatusName, ...] = ("Completed", "Failed")


@dataclass(frozen=True)
class InstanceStatus:
    """Where an instance stands (Client.get_status, Client.wait_for_completion).

    output: the current execution's output as the runtime stored it: a
    Completed instance's result (JSON text), a Failed one's error."""

    instance_id: str
    status: InstanceStatusName
    orchestration_name: str | None
    orchestration_version: str | None
    execution_id: int | None  # None while Pending
    output: str | None
    created_at: datetime
    updated_at: datetime

    @property
    def ended(self) -> bool:
        """Completed or Failed: nothing more will happen to it."""
        return self.status in ENDED_STATUSES


@dataclass(frozen=True)
class StartRequest:
    """One start of Client.start_many. `priority` (0, the default, to 9:
    higher is taken first) and `labels` ({"tenant": "acme"}) steer the
    instance and everything it causes (docs/flow-control.md)."""

    instance_id: str
    orchestration: str
    input: Any = None
    version: str | None = None
    priority: int = 0
    labels: Mapping[str, str] | None = field(default=None, hash=False)

    @property
    def steered(self) -> bool:
        """Whether the start asks for a priority or labels."""
        return self.priority != 0 or bool(self.labels)


@dataclass(frozen=True)
class StartResult:
    """What a start did: `started` False means the instance already existed
    (or its start was queued) with the same orchestration and input, and
    nothing was written."""

    instance_id: str
    started: bool

    @property
    def already_existed(self) -> bool:
        return not self.started


def status_name(value: object) -> InstanceStatusName:
    """A status read from the hub, checked against the ones the client knows."""
    if value not in get_args(InstanceStatusName):
        raise PermanentError("status", f"the hub reports an unknown instance status {value!r}")
    return cast(InstanceStatusName, value)


# What a schedule does after downtime (provider/client/scheduler.py).
MissedPolicy = Literal["skip", "once"]


@dataclass(frozen=True)
class Schedule:
    """An orchestration started on a schedule (Client.set_schedule): at each
    tick of `cron` (read in time_zone) or of every `every_s` seconds."""

    name: str
    orchestration: str
    version: str | None
    input: str  # JSON text
    cron: str | None
    every_s: int | None
    time_zone: str
    missed: MissedPolicy
    paused: bool
    # The latest tick that started an instance (None: none yet; on a hub
    # before revision 0029, the latest tick started or skipped).
    last_tick_at: datetime | None
    created_at: datetime
    updated_at: datetime
    # Revision 0029: its fires that failed in a row (0 after a start, a change
    # or a resume), the latest one's error, and why the scheduler paused it
    # after too many (None: it did not).
    failures: int = 0
    last_error: str | None = None
    paused_reason: str | None = None
    # Revision 0029: the priority and labels each tick's instance starts with.
    priority: int = 0
    labels: Mapping[str, str] = field(default_factory=dict)
    # Revision 0029: the instance the latest started tick made (None: none
    # yet, or a hub before 0029).
    last_instance_id: str | None = None
    # The first tick after `ticks_until` (None: a cron schedule where the
    # cron extra is not installed); a paused schedule starts it only if
    # resumed before it.
    next_tick: datetime | None = None
    # What the schedulers go on from: the latest tick started or skipped,
    # or when the schedule was made or resumed.
    ticks_until: datetime | None = None


@dataclass(frozen=True)
class FlowRule:
    """A flow rule of the hub (docs/flow-control.md), enforced by the fetch
    every runtime calls: the key `name` (an activity's name for kind
    "activity", a label 'tenant=acme' for "label", a label's key for
    "label_each", each of whose values has the limit, an orchestration's name
    for "orchestration", whose turns it holds) is paused (handed out never),
    limited to `max_running` items leased at once over the whole hub (of
    which `running` hold a lease now, and for a label or an orchestration
    `turns` of its instances' turns, which it limits as well), or to
    `per_second` handed out a second with bursts up to `burst` (its bucket
    has `tokens` now)."""

    kind: Literal["activity", "label", "label_each", "orchestration"]
    name: str
    paused: bool
    max_running: int | None
    running: int
    per_second: float | None
    burst: int | None
    tokens: float | None
    changed_at: datetime
    changed_by: str  # the login that made the latest change
    reason: str | None
    turns: int = 0  # turns leased under a label's limit now


@dataclass(frozen=True)
class Restart:
    """One restart of an ended instance (Client.restart, `taskhub-pg
    restart`, the dashboard's): `instance_id`'s execution
    `from_execution_id`, which had ended `from_status` with `from_output`
    (its result, or why it failed), runs again as `new_instance_id`'s
    execution `new_execution_id` (the same id: its next execution; a new
    id: its first), with `input`, restarted by the database login
    `restarted_by` for `reason`. `repeated`: the request was made before,
    and this call wrote nothing. Client.restart returns the ids, executions,
    status and `repeated`; Client.restarts (the record) fills every field."""

    instance_id: str
    from_execution_id: int
    from_status: str
    new_instance_id: str
    new_execution_id: int
    repeated: bool = False
    from_output: str | None = None
    input: str | None = None
    restarted_at: datetime | None = None
    restarted_by: str | None = None
    reason: str | None = None
    id: int | None = None


@dataclass(frozen=True)
class TickOutcome:
    """How one fire of a schedule's tick went (Client.fire_schedule_outcome)."""

    taken: bool  # this call started the tick, or skipped it as late
    failure: str | None = None  # why the hub refused its start: counted against the schedule
    paused: bool = False  # that failure paused the schedule
