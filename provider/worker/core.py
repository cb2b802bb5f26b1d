"""What the threaded and the asyncio worker share (WorkerCore): their
settings, the handlers, the statistics, the decisions about an item (run
it, fail it as poison, give it back) and the ids of its log records; and
the context a handler receives. What happens in which order is
provider/worker/item_flow.py (an item) and provider/worker/slot_loop.py (a
slot, the session heartbeat)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from provider.backoff import Backoff
from provider.config import TaskHubConfig
from provider.errors import InvalidInput, LockLost, TaskHubError
from provider.logs import fields
from provider.shapes import activity_completed, activity_failed, activity_poisoned
from provider.types import JsonObject, TagFilter
from provider.worker.activity_item import ActivityItem
from provider.worker.cancellation import CancellationToken
from provider.worker.trace_parents import TraceParents

# Both workers log on one logger, the one they always had (users set its level).
log = logging.getLogger("provider.worker.activity_worker")

Handler = Callable[..., Any]
UNREGISTERED_RETRY_MS = 1_000
ACK_ATTEMPTS = 3


# The pauses between ack attempts after a transient failure: 50 ms, 100 ms, ...
ACK_BACKOFF = Backoff(first_s=0.05, cap_s=1.0)
# A worker's fetch after an error: 100 ms doubled up to max_error_backoff_ms.
FIRST_ERROR_PAUSE_S = 0.1


def ack_backoff_s(attempt: int) -> float:
    """The pause before ack attempt `attempt + 1` after a transient failure."""
    return ACK_BACKOFF.pause_s(attempt + 1)


@dataclass(frozen=True)
class ActivityContext:
    instance_id: str
    execution_id: int
    activity_id: int
    activity_name: str
    session_id: str | None
    tag: str | None
    attempt: int
    lock_token: str
    token: CancellationToken

    @property
    def is_cancelled(self) -> bool:
        return self.token.cancelled


# A slot that just ran an item and finds the queue empty looks again after
# this long before it tells the server it waits (push wakeups).
BATCH_POLL_S = 0.02


@dataclass
class WorkerStats:
    started: int = 0  # handlers started
    completed: int = 0
    failed: int = 0
    poisoned: int = 0
    lost: int = 0
    given_back: int = 0
    renewals: int = 0
    renewal_errors: int = 0


class WorkerOptions(TypedDict, total=False):
    """The settings both workers take (see WorkerCore for the defaults)."""

    concurrency: int  # activities run at once
    tags: TagFilter | None  # which activities this worker fetches (None: those with no tag)
    # The worker's name for sessions: with one, it also runs session-bound
    # activities and keeps its sessions alive (None: no sessions).
    owner_id: str | None
    lock_timeout_ms: int | None  # an activity's lease, renewed while it runs (None: the hub's)
    session_lock_timeout_ms: int | None  # a session's lease (None: the hub's)
    session_idle_timeout_ms: int  # a session with no activity this long is let go
    max_attempts: int  # deliveries of one activity before it fails as poison
    idle_poll_ms: int  # the first wait after an empty fetch
    max_idle_poll_ms: int  # the longest wait between empty fetches (the waits double)
    max_error_backoff_ms: int  # the longest wait after a failed call (the waits double)
    push_wakeups: bool  # wake on the hub's notifications, not only by polling


class WorkerCore:
    """What the threaded and the asyncio worker share: settings, handlers,
    statistics, the decisions about an item and the ids of its log records."""

    def __init__(
        self,
        hub_config: TaskHubConfig,
        *,
        concurrency: int = 4,
        tags: TagFilter | None = None,
        owner_id: str | None = None,
        lock_timeout_ms: int | None = None,
        session_lock_timeout_ms: int | None = None,
        session_idle_timeout_ms: int = 300_000,
        max_attempts: int = 10,
        idle_poll_ms: int = 20,
        max_idle_poll_ms: int = 500,
        max_error_backoff_ms: int = 5_000,
        push_wakeups: bool = True,
    ) -> None:
        worker = type(self).__name__  # the refusals name the worker the caller made
        if concurrency < 1 or max_attempts < 1:
            raise InvalidInput(worker, "concurrency and max_attempts must be at least 1")
        if not 1 <= idle_poll_ms <= max_idle_poll_ms or max_error_backoff_ms < 1:
            raise InvalidInput(
                worker,
                "idle_poll_ms must be at least 1 and at most max_idle_poll_ms, and"
                f" max_error_backoff_ms at least 1; got {idle_poll_ms}, {max_idle_poll_ms},"
                f" {max_error_backoff_ms}",
            )
        # A lease of no time would fail each item it fetches, in its lease keeper.
        for name, given in (
            ("lock_timeout_ms", lock_timeout_ms),
            ("session_lock_timeout_ms", session_lock_timeout_ms),
        ):
            if given is not None and given <= 0:
                raise InvalidInput(
                    worker, f"{name} must be positive (None: the hub's), got {given}"
                )
        if tags is not None and not isinstance(tags, TagFilter):
            raise InvalidInput(
                worker, f"tags must be a TagFilter (TagFilter.only(...)), got {tags!r}"
            )
        self.concurrency = concurrency
        self.tags = tags or TagFilter.default_only()
        self.owner_id = owner_id
        self.lock_timeout_ms = lock_timeout_ms or hub_config.worker_lock_timeout_ms
        self.session_lock_timeout_ms = session_lock_timeout_ms or hub_config.session_lock_timeout_ms
        self.session_idle_timeout_ms = session_idle_timeout_ms
        self.max_attempts = max_attempts
        self.idle_poll_s = idle_poll_ms / 1000
        self.max_idle_poll_s = max_idle_poll_ms / 1000
        self.max_error_backoff_s = max_error_backoff_ms / 1000
        # After a fetch error, pauses with jitter: a fleet that lost its
        # database together does not come back in step. An idle slot's poll
        # doubles exactly (the notification, not the poll, wakes it).
        self.error_backoff = Backoff(
            min(FIRST_ERROR_PAUSE_S, self.max_error_backoff_s), self.max_error_backoff_s
        )
        self.idle_backoff = Backoff(self.idle_poll_s, self.max_idle_poll_s, jitter=0.0)
        # Idle slots wait for a notification (the poll stays as the safety net).
        self.push_wakeups = push_wakeups
        self.stats = WorkerStats()
        self._schema = hub_config.schema
        self._handlers: dict[str, Handler] = {}
        self._trace_parents = TraceParents(hub_config.schema)
        if concurrency >= hub_config.pool_max_size:
            # Every slot can be in a call at once (polling, acking): a lease
            # renewal then waits for a connection, and a short lease can
            # expire while it waits (seen with 8 slots on a pool of 10 and a
            # 300 ms lease).
            log.warning(
                "%s: concurrency %d with a pool of %d connections leaves none for"
                " lease renewals while every slot is in a call; give the hub a"
                " larger pool_max_size (concurrency + 2 or more)",
                worker,
                concurrency,
                hub_config.pool_max_size,
            )

    # -- registration ---------------------------------------------------------

    def register(self, name: str, handler: Handler) -> None:
        """Run `handler` for activity `name`; a name has one handler (a second
        registration is refused, not a silent replacement of the first)."""
        operation = f"{type(self).__name__}.register"
        if not isinstance(name, str) or not name:
            raise InvalidInput(
                operation, f"an activity name must be a non-empty text, got {name!r}"
            )
        if not callable(handler):
            raise InvalidInput(operation, f"the handler of {name!r} is not callable: {handler!r}")
        if name in self._handlers:
            raise InvalidInput(operation, f"activity {name!r} is already registered")
        self._handlers[name] = handler

    def activity(self, name: str) -> Callable[[Handler], Handler]:
        def decorator(handler: Handler) -> Handler:
            self.register(name, handler)
            return handler

        return decorator

    # -- decisions ------------------------------------------------------------

    def poison_completion(self, item: ActivityItem) -> JsonObject | None:
        """The failure to ack instead of running an item fetched too often, or None."""
        lease, body = item.lease, item.body
        if lease.attempt_count <= self.max_attempts or body is None:
            return None
        log.error(
            "poison: failing activity %s instead of running it (attempt %d of at most %d)",
            item.name,
            lease.attempt_count,
            self.max_attempts,
            extra=self.item_fields("worker.poison", item),
        )
        return activity_poisoned(body, lease.attempt_count, self.max_attempts)

    def handler_for(self, item: ActivityItem) -> Handler | None:
        handler = self._handlers.get(item.name)
        if handler is None:
            log.warning(
                "no handler for activity %s; giving it back",
                item.name,
                extra=self.item_fields("worker.no_handler", item),
            )
        return handler

    def unreadable(self, item: ActivityItem) -> None:
        """An item this worker cannot even read (written behind the
        provider's back): it is left alone; its lease expires and the fetch
        path moves it to dead_letters. The slot keeps serving."""
        log.error(
            "cannot process worker item: not an ActivityExecute work item",
            extra=self.item_fields("worker.item_unreadable", item),
        )

    @staticmethod
    def context(item: ActivityItem, token: CancellationToken) -> ActivityContext:
        lease, body = item.lease, item.body or {}
        return ActivityContext(
            instance_id=str(body["instance"]),
            execution_id=int(body["execution_id"]),
            activity_id=int(body["id"]),
            activity_name=str(body.get("name")),
            session_id=body.get("session_id"),
            tag=body.get("tag"),
            attempt=lease.attempt_count,
            lock_token=lease.lock_token,
            token=token,
        )

    def _span_attributes(self, context: ActivityContext) -> dict[str, str | int]:
        """The attributes of the activity's span (provider/tracing.py)."""
        attributes: dict[str, str | int] = {
            "taskhub.schema": self._schema,
            "taskhub.instance_id": context.instance_id,
            "taskhub.execution_id": context.execution_id,
            "taskhub.activity_id": context.activity_id,
            "taskhub.activity_name": context.activity_name,
            "taskhub.attempt": context.attempt,
        }
        if context.tag:
            attributes["taskhub.tag"] = context.tag
        return attributes

    def _failed(
        self, context: ActivityContext, body: JsonObject, error: Exception
    ) -> JsonObject | None:
        """The completion of a handler that raised (None: it was cancelled)."""
        if context.token.cancelled:
            return None
        log.info(
            "activity %s failed: %s",
            context.activity_name,
            error,
            extra=self._worker_fields(
                "worker.activity_failed",
                instance_id=context.instance_id,
                activity_id=context.activity_id,
                activity=context.activity_name,
                lock_token=context.lock_token,
                attempt_count=context.attempt,
            ),
        )
        return activity_failed(body, f"{type(error).__name__}: {error}")

    def _completed(
        self, context: ActivityContext, body: JsonObject, result: Any
    ) -> JsonObject | None:
        """The completion of a handler that returned (None: it was cancelled).
        A result JSON cannot hold fails the activity, as a handler that raised."""
        if context.token.cancelled:
            return None
        try:
            return activity_completed(body, result)
        except InvalidInput as error:
            return self._failed(context, body, error)

    def count(self, completion: JsonObject) -> None:
        if "ActivityCompleted" in completion:
            self.stats.completed += 1
        else:
            self.stats.failed += 1

    def ack_retry_delay_s(
        self, item: ActivityItem, error: TaskHubError, attempt: int
    ) -> float | None:
        """After failed ack attempt `attempt` (from 0): the pause before the
        next one, or None to give up (logged). The workers' one ack retry
        policy: ACK_ATTEMPTS attempts, a back-off doubling from 50 ms, and a
        lost lease never retried."""
        if isinstance(error, LockLost):
            # The same ids as the poison decision, so that a decision and
            # its failed ack read as one event in the logs.
            log.warning(
                "ack refused, lease lost: %s",
                error.message,
                extra=self.item_fields("worker.ack_refused", item, sqlstate=error.sqlstate),
            )
            self.stats.lost += 1
            return None
        if not error.retryable or attempt == ACK_ATTEMPTS - 1:
            log.error(
                "ack failed: %s",
                error,
                extra=self.item_fields("worker.ack_failed", item, sqlstate=error.sqlstate),
            )
            return None
        return ack_backoff_s(attempt)

    def abandon_failed(self, item: ActivityItem, error: TaskHubError) -> None:
        log.info(
            "abandon failed (the lease will expire instead): %s",
            error,
            extra=self.item_fields("worker.abandon_failed", item, sqlstate=error.sqlstate),
        )

    def cannot_process(self, item: ActivityItem) -> None:
        """A bug of ours while serving an item: logged (call it in the
        `except`, for the traceback), and the slot keeps serving."""
        log.exception(
            "cannot process worker item",
            extra=self.item_fields("worker.item_unreadable", item),
        )

    def fetch_failed(self, error: TaskHubError, retry_in_s: float) -> None:
        # The database is down or refusing: the slot backs off, never spins.
        log.warning(
            "fetch_work_item failed, retrying in %.1f s: %s",
            retry_in_s,
            error,
            extra=self._worker_fields(
                "worker.fetch_failed", sqlstate=error.sqlstate, error_class=type(error).__name__
            ),
        )

    def heartbeat_failed(self, error: TaskHubError) -> None:
        log.warning(
            "session heartbeat failed, retrying: %s",
            error,
            extra=self._worker_fields("worker.session_heartbeat_failed", sqlstate=error.sqlstate),
        )

    # -- log records ----------------------------------------------------------

    def item_ids(self, item: ActivityItem) -> dict[str, object]:
        """The ids every record about one worker item carries."""
        lease, body = item.lease, item.body or {}
        ids = {
            "schema": self._schema,
            "owner_id": self.owner_id,
            "instance_id": body.get("instance"),
            "activity_id": body.get("id"),
            "activity": body.get("name"),
            "lock_token": lease.lock_token,
            "attempt_count": lease.attempt_count,
        }
        return {name: value for name, value in ids.items() if value is not None}

    def item_fields(self, event: str, item: ActivityItem, **more: object) -> dict[str, object]:
        return fields(event, **self.item_ids(item), **more)

    def _worker_fields(self, event: str, **more: object) -> dict[str, object]:
        return fields(event, schema=self._schema, owner_id=self.owner_id, **more)
