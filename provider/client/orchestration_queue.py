"""The orchestrator queue: enqueue, lease, commit, give back and renew turns."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from provider.client.arguments import (
    check_instance_id,
    check_text,
    check_version,
    check_work_item_size,
)
from provider.client.plans import Plan, Plans
from provider.client.procedures import now_ms
from provider.logs import fields
from provider.shapes import (
    ExecutionMetadata,
    ack_metadata_json,
    external_raised_item,
    history_rows,
    json_param,
    json_text,
    runtime_work_item_text,
    start_orchestration_item,
    target_instance,
)
from provider.tracing import current_trace_context
from provider.types import JsonObject, KvEntry, OrchestrationItem, VersionRange

log = logging.getLogger(__name__)

# A fetch that keeps meeting orphan mailboxes gives up after this many.
MAX_ORPHAN_DROPS_PER_FETCH = 8


def visible_after(delay_ms: int) -> datetime:
    """When a message queued now with this delay becomes visible (this host's clock)."""
    return datetime.fromtimestamp((now_ms() + delay_ms) / 1000, tz=UTC)


def is_orphan_mailbox(item: OrchestrationItem) -> bool:
    """Only QueueMessage items for an instance that has never started."""
    return (
        item.orchestration_name == "Unknown"
        and not item.history
        and item.history_error is None
        and all("QueueMessage" in message for message in item.messages)
    )


class OrchestrationQueue(Plans):
    def enqueue_orchestrator_work(
        self,
        instance_id: str,
        work_item: JsonObject | str,
        *,
        delay_ms: int = 0,
        visible_at: datetime | None = None,
    ) -> Plan[None]:
        """Queue a message for an instance, visible now, after delay_ms, or at visible_at."""
        if visible_at is None:
            visible_at = visible_after(delay_ms)
        yield from self._call(
            "enqueue_orchestrator_work",
            p_instance_id=instance_id,
            p_work_item=json_text(work_item, operation="enqueue_orchestrator_work"),
            p_visible_at=visible_at,
        )

    def enqueue_for_orchestrator(self, work_item: JsonObject, *, delay_ms: int = 0) -> Plan[None]:
        """Queue a message for the instance it names (the parent, for sub-orchestration results)."""
        instance_id = target_instance(work_item)
        yield from self.enqueue_orchestrator_work(instance_id, work_item, delay_ms=delay_ms)

    def start_orchestration(
        self,
        instance_id: str,
        name: str,
        input: Any = None,
        version: str | None = None,
        *,
        once: bool = True,
    ) -> Plan[bool]:
        """Queue the start of an orchestration: the work item the duroxide client's
        start_orchestration (start_orchestration_versioned with a version) writes,
        once. True: this call started it; False: the instance exists, or its
        start is queued, and nothing was written. A start whose outcome the
        caller did not hear (a RetryableError in a failover) is safe to repeat
        with the same instance id. Every argument is checked here, before any
        SQL (provider/client/arguments.py). Without `once` (a schema before
        revision 0025), the start is queued as the duroxide client queues it,
        and the result is True."""
        check_instance_id("start_orchestration", instance_id)
        check_text("start_orchestration", "name", name)
        check_version("start_orchestration", version)
        item = runtime_work_item_text(start_orchestration_item(instance_id, name, input, version))
        check_work_item_size("start_orchestration", "the input", item)
        if not once:
            yield from self._enqueue_in_callers_trace(instance_id, item)
            return True
        trace_context = current_trace_context()
        started = yield from self._scalar(
            "taskhub_start_orchestration",
            p_instance_id=instance_id,
            p_work_item=item,
            p_visible_at=visible_after(0),
            p_traceparent=trace_context.traceparent if trace_context else None,
            p_tracestate=trace_context.tracestate if trace_context else None,
        )
        return bool(started)

    def raise_event(self, instance_id: str, name: str, data: Any = None) -> Plan[None]:
        """Queue an external event for an instance, as the duroxide client's raise_event
        (its arguments checked before any SQL, as start_orchestration's)."""
        check_instance_id("raise_event", instance_id)
        check_text("raise_event", "name", name)
        item = runtime_work_item_text(external_raised_item(instance_id, name, data))
        check_work_item_size("raise_event", "the data", item)
        yield from self._enqueue_in_callers_trace(instance_id, item)

    def _enqueue_in_callers_trace(self, instance_id: str, item: str) -> Plan[None]:
        """The message, and in the same call (one transaction) the caller's
        W3C trace context for the instance's workers (provider/tracing.py)."""
        trace_context = current_trace_context()
        if trace_context is None:
            yield from self.enqueue_orchestrator_work(instance_id, item)
            return
        yield from self._call(
            "taskhub_enqueue_traced_orchestrator_work",
            p_instance_id=instance_id,
            p_work_item=item,
            p_visible_at=visible_after(0),
            p_traceparent=trace_context.traceparent,
            p_tracestate=trace_context.tracestate,
        )

    def fetch_orchestration_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        versions: VersionRange | Sequence[VersionRange] | None = None,
        caller_now_ms: int | None = None,
    ) -> Plan[OrchestrationItem | None]:
        """Lease the next instance with visible messages, or None when none is free.

        versions: only instances whose current execution is pinned inside the
        range (or not pinned) are leased. Of a list, the first range is used;
        an empty list matches nothing.
        """
        if versions is not None and not isinstance(versions, VersionRange):
            if not versions:
                return None
            versions = versions[0]
        for _ in range(MAX_ORPHAN_DROPS_PER_FETCH):
            item = yield from self._fetch_orchestration_item(
                lock_timeout_ms, versions, caller_now_ms
            )
            if item is None or not is_orphan_mailbox(item):
                return item
            # Mailbox messages for an instance that never started: drop them,
            # so they are not fetched again and again (as duroxide does).
            yield from self.ack_orchestration_item(item.lock_token, item.execution_id)
        return None

    def _fetch_orchestration_item(
        self,
        lock_timeout_ms: int | None,
        versions: VersionRange | None,
        caller_now_ms: int | None,
    ) -> Plan[OrchestrationItem | None]:
        rows = yield from self._call(
            "fetch_orchestration_item",
            p_now_ms=caller_now_ms if caller_now_ms is not None else now_ms(),
            p_lock_timeout_ms=lock_timeout_ms or self.config.orchestration_lock_timeout_ms,
            p_min_version_packed=VersionRange.pack(versions.minimum) if versions else None,
            p_max_version_packed=VersionRange.pack(versions.maximum) if versions else None,
        )
        if not rows:
            return None
        row = rows[0]
        instance_id, execution_id = row["out_instance_id"], row["out_execution_id"]
        token, attempts = row["out_lock_token"], row["out_attempt_count"]
        history, kv = row["out_history"], row["out_kv_snapshot"]
        if attempts > 1:
            # Handed out before and not acked: a crash, a lost lease, or the
            # start of a poison loop. The same ids as the ack that follows.
            log.info(
                "orchestration item handed out again (attempt %d)",
                attempts,
                extra=fields(
                    "orchestration.redelivered",
                    schema=self.config.schema,
                    instance_id=instance_id,
                    execution_id=execution_id,
                    lock_token=token,
                    attempt_count=attempts,
                ),
            )
        history_error = None
        if any(not isinstance(event, dict) for event in history):
            history_error = f"history of {instance_id} holds events that are not valid JSON"
            log.warning(
                "%s",
                history_error,
                extra=fields(
                    "orchestration.history_unreadable",
                    schema=self.config.schema,
                    instance_id=instance_id,
                    lock_token=token,
                ),
            )
            history = []
        return OrchestrationItem(
            instance_id=instance_id,
            orchestration_name=row["out_orchestration_name"],
            orchestration_version=row["out_orchestration_version"],
            execution_id=execution_id,
            history=history,
            messages=row["out_messages"],
            lock_token=token,
            attempt_count=attempts,
            kv_snapshot={
                key: KvEntry(entry["value"], entry["last_updated_at_ms"])
                for key, entry in (kv or {}).items()
            },
            history_error=history_error,
        )

    def ack_orchestration_item(
        self,
        lock_token: str,
        execution_id: int,
        *,
        history_delta: Sequence[JsonObject] = (),
        worker_items: Sequence[JsonObject] = (),
        orchestrator_items: Sequence[JsonObject] = (),
        metadata: ExecutionMetadata | None = None,
        cancelled_activities: Sequence[JsonObject] = (),
    ) -> Plan[None]:
        """Commit a turn atomically and release its lease. Raises LockLost if the lease is gone.

        cancelled_activities: {"instance", "execution_id", "activity_id"} of
        scheduled activities to take off the worker queue.
        """
        operation = "ack_orchestration_item"
        yield from self._call(
            "ack_orchestration_item",
            p_lock_token=lock_token,
            p_now_ms=now_ms(),
            p_execution_id=execution_id,
            p_history_delta=json_param(
                operation, "history_delta", history_rows(history_delta, operation)
            ),
            p_worker_items=json_param(operation, "worker_items", list(worker_items)),
            p_orchestrator_items=json_param(
                operation, "orchestrator_items", list(orchestrator_items)
            ),
            p_metadata=json_param(
                operation, "metadata", ack_metadata_json(metadata, history_delta)
            ),
            p_cancelled_activities=json_param(
                operation, "cancelled_activities", list(cancelled_activities)
            ),
        )

    def abandon_orchestration_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> Plan[str]:
        """Release a lease; its messages come back now or after delay_ms. Returns the instance."""
        instance_id = yield from self._scalar(
            "abandon_orchestration_item",
            p_lock_token=lock_token,
            p_now_ms=now_ms(),
            p_delay_ms=delay_ms,
            p_ignore_attempt=ignore_attempt,
        )
        return str(instance_id)

    def renew_orchestration_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> Plan[int]:
        """Extend a live lease to now + extend_ms; returns its new end (epoch ms).
        Runs taskhub_renew_orchestration_lease (the contract's
        renew_orchestration_item_lock takes seconds and returns nothing)."""
        locked_until = yield from self._scalar(
            "taskhub_renew_orchestration_lease",
            timeout_s=timeout_s,
            p_lock_token=lock_token,
            p_now_ms=now_ms(),
            p_extend_ms=extend_ms,
        )
        return int(locked_until)
