"""The worker queue: activity executions, their leases, and session leases."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from provider.client.plans import Plan, Plans
from provider.client.procedures import now_ms
from provider.errors import InvalidInput, PermanentError
from provider.logs import fields
from provider.shapes import activity_body, completion_instance, json_text
from provider.types import JsonObject, TagFilter, WorkItemLease

log = logging.getLogger(__name__)


class WorkerQueue(Plans):
    def enqueue_worker_work(self, work_item: JsonObject) -> Plan[None]:
        """Queue an ActivityExecute work item (identity, session and tag are read from it)."""
        body = activity_body(work_item)
        if body is None:
            raise InvalidInput(
                "enqueue_worker_work", "worker items must be ActivityExecute work items"
            )
        yield from self._call(
            "enqueue_worker_work",
            p_work_item=json_text(work_item, operation="enqueue_worker_work"),
            p_now_ms=now_ms(),
            p_instance_id=body.get("instance"),
            p_execution_id=body.get("execution_id"),
            p_activity_id=body.get("id"),
            p_session_id=body.get("session_id"),
            p_tag=body.get("tag"),
        )

    def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> Plan[WorkItemLease | None]:
        """Lease the oldest eligible worker item, or None.

        With owner_id, items of sessions this owner holds (or that nobody
        holds) are eligible too, and taking one claims the session.
        """
        tags = tags or TagFilter.default_only()
        if tags.mode == "none":
            return None
        session_lock_ms = None
        if owner_id:
            session_lock_ms = session_lock_timeout_ms or self.config.session_lock_timeout_ms
        rows = yield from self._call(
            "fetch_work_item",
            p_now_ms=caller_now_ms if caller_now_ms is not None else now_ms(),
            p_lock_timeout_ms=lock_timeout_ms or self.config.worker_lock_timeout_ms,
            p_owner_id=owner_id,
            p_session_lock_timeout_ms=session_lock_ms,
            p_tag_filter=list(tags.tags),
            p_tag_mode=tags.mode,
        )
        if not rows:
            return None
        work_item = rows[0]["out_work_item"]
        token, attempts = rows[0]["out_lock_token"], rows[0]["out_attempt_count"]
        try:
            lease = WorkItemLease(json.loads(work_item), token, attempts)
        except json.JSONDecodeError as error:
            # Written behind our back (enqueue refuses it): the lease expires and
            # the fetch path moves it to dead_letters after enough attempts.
            raise PermanentError(
                "fetch_work_item", f"worker item {token} is not valid JSON: {error}"
            ) from error
        if attempts > 1:
            # Handed out before and not acked: a crash, a lost lease, or the
            # start of a poison loop. The same ids as the worker's records.
            body = activity_body(lease.work_item) or {}
            log.info(
                "worker item handed out again (attempt %d)",
                attempts,
                extra=fields(
                    "work_item.redelivered",
                    schema=self.config.schema,
                    instance_id=body.get("instance"),
                    activity_id=body.get("id"),
                    activity=body.get("name"),
                    lock_token=token,
                    attempt_count=attempts,
                ),
            )
        return lease

    def ack_work_item(self, lock_token: str, completion: JsonObject | None = None) -> Plan[None]:
        """Delete a leased item and queue its completion for the orchestration.

        A None completion acks a cancelled activity. Raises LockLost if the lease is gone.
        Runs ack_worker (the contract's name).
        """
        instance_id = completion_instance(completion) if completion is not None else None
        yield from self._call(
            "ack_worker",
            p_lock_token=lock_token,
            p_instance_id=instance_id,
            p_completion_json=(
                json_text(completion, operation="ack_work_item", what="the completion")
                if completion
                else None
            ),
            p_now_ms=now_ms(),
        )

    def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> Plan[None]:
        yield from self._call(
            "abandon_work_item",
            p_lock_token=lock_token,
            p_now_ms=now_ms(),
            p_delay_ms=delay_ms,
            p_ignore_attempt=ignore_attempt,
        )

    def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> Plan[int]:
        """Extend a live worker lease to now + extend_ms; returns its new end (epoch ms).
        Runs taskhub_renew_work_item_lease (the contract's renew_work_item_lock
        takes seconds and returns nothing)."""
        locked_until = yield from self._scalar(
            "taskhub_renew_work_item_lease",
            timeout_s=timeout_s,
            p_lock_token=lock_token,
            p_now_ms=now_ms(),
            p_extend_ms=extend_ms,
        )
        return int(locked_until)

    def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> Plan[int]:
        """Extend the live, non-idle sessions of these owners; returns how many."""
        if not owner_ids:
            return 0
        renewed = yield from self._scalar(
            "renew_session_lock",
            p_owner_ids=list(owner_ids),
            p_now_ms=now_ms(),
            p_extend_ms=extend_ms,
            p_idle_timeout_ms=idle_timeout_ms,
        )
        return int(renewed)

    def renew_session_lease(self, session_id: str, owner_id: str, extend_ms: int) -> Plan[int]:
        """Extend one session held by owner_id; returns its new end (epoch ms).

        Raises LockLost when the session is gone, expired or owned by another worker.
        Runs taskhub_renew_session_lease.
        """
        locked_until = yield from self._scalar(
            "taskhub_renew_session_lease",
            p_session_id=session_id,
            p_owner_id=owner_id,
            p_now_ms=now_ms(),
            p_extend_ms=extend_ms,
        )
        return int(locked_until)

    def set_wakeup_waiting(self, listener_pid: int, waiting: bool) -> Plan[None]:
        """Tell the hub whether the listener with this backend pid waits for work:
        only then do the procedures notify (provider/worker/slots.py decides when).
        Runs taskhub_set_waiting."""
        yield from self._call("taskhub_set_waiting", p_pid=listener_pid, p_waiting=waiting)

    def cleanup_orphaned_sessions(self) -> Plan[int]:
        """Delete expired sessions that no worker item refers to; returns how many."""
        deleted = yield from self._scalar("cleanup_orphaned_sessions", p_now_ms=now_ms())
        return int(deleted)
