"""A thin psycopg 3 client of the task-hub procedures.

Every method is one procedure call on a pooled autocommit connection, so each
call is its own transaction, exactly as the duroxide runtime calls them.
Errors come out as `LockLost`, `RetryableError` or `PermanentError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from provider.config import TaskHubConfig
from provider.errors import translate
from provider.types import (
    JsonObject,
    KvEntry,
    OrchestrationItem,
    TagFilter,
    VersionRange,
    WorkItemLease,
)


def now_ms() -> int:
    """This host's clock in Unix epoch milliseconds (the procedures' p_now_ms)."""
    return time.time_ns() // 1_000_000


def _json_text(value: JsonObject | str) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _history_rows(events: Sequence[JsonObject]) -> list[JsonObject]:
    """Events as the procedures store them: id, type and the event's JSON text."""
    return [
        {
            "event_id": event["event_id"],
            "event_type": str(event.get("type", "Event")),
            "event_data": _json_text(event),
        }
        for event in events
    ]


class TaskHub:
    """One task hub (one schema) in one database."""

    def __init__(self, config: TaskHubConfig, *, open_pool: bool = True) -> None:
        self.config = config
        options = [f"-c application_name={config.application_name}"]
        if config.statement_timeout_ms is not None:
            options.append(f"-c statement_timeout={config.statement_timeout_ms}")
        self._pool = ConnectionPool(
            config.url,
            min_size=config.pool_min_size,
            max_size=config.pool_max_size,
            kwargs={"autocommit": True, "options": " ".join(options)},
            open=open_pool,
            check=ConnectionPool.check_connection,
            name=f"taskhub:{config.schema}",
        )
        self._schema = sql.Identifier(config.schema)

    @classmethod
    def connect(cls, url: str, schema: str = "public", **settings: Any) -> TaskHub:
        return cls(TaskHubConfig(url=url, schema=schema, **settings))

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> TaskHub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------

    @contextmanager
    def _cursor(self, operation: str) -> Iterator[psycopg.Cursor[tuple[Any, ...]]]:
        try:
            with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                yield cur
        except (psycopg.Error, PoolTimeout) as error:
            raise translate(operation, error) from error

    def _call(self, function: str, args: Sequence[Any]) -> list[tuple[Any, ...]]:
        """SELECT * FROM <schema>.<function>(args...) and return all rows."""
        query = sql.SQL("SELECT * FROM {}.{}({})").format(
            self._schema,
            sql.Identifier(function),
            sql.SQL(", ").join(sql.Placeholder() * len(args)),
        )
        with self._cursor(function) as cur:
            cur.execute(query, args)
            return cur.fetchall() if cur.description else []

    # -- orchestrator queue -------------------------------------------------

    def enqueue_orchestrator_work(
        self,
        instance_id: str,
        work_item: JsonObject | str,
        *,
        delay_ms: int = 0,
        visible_at: datetime | None = None,
    ) -> None:
        """Queue a message for an instance, visible now, after delay_ms, or at visible_at."""
        if visible_at is None:
            visible_at = datetime.fromtimestamp((now_ms() + delay_ms) / 1000, tz=UTC)
        self._call("enqueue_orchestrator_work", [instance_id, _json_text(work_item), visible_at])

    def fetch_orchestration_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        versions: VersionRange | None = None,
        caller_now_ms: int | None = None,
    ) -> OrchestrationItem | None:
        """Lease the next instance with visible messages, or None when none is free."""
        rows = self._call(
            "fetch_orchestration_item",
            [
                caller_now_ms if caller_now_ms is not None else now_ms(),
                lock_timeout_ms or self.config.orchestration_lock_timeout_ms,
                VersionRange.pack(versions.minimum) if versions else None,
                VersionRange.pack(versions.maximum) if versions else None,
            ],
        )
        if not rows:
            return None
        (instance_id, name, version, execution_id, history, messages, token, attempts, kv) = rows[0]
        history_error = None
        if any(not isinstance(event, dict) for event in history):
            history_error = f"history of {instance_id} holds events that are not valid JSON"
            history = []
        return OrchestrationItem(
            instance_id=instance_id,
            orchestration_name=name,
            orchestration_version=version,
            execution_id=execution_id,
            history=history,
            messages=messages,
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
        metadata: JsonObject | None = None,
        cancelled_activities: Sequence[JsonObject] = (),
    ) -> None:
        """Commit a turn atomically and release its lease. Raises LockLost if the lease is gone."""
        self._call(
            "ack_orchestration_item",
            [
                lock_token,
                now_ms(),
                execution_id,
                Jsonb(_history_rows(history_delta)),
                Jsonb(list(worker_items)),
                Jsonb(list(orchestrator_items)),
                Jsonb(metadata or {}),
                Jsonb(list(cancelled_activities)),
            ],
        )

    def abandon_orchestration_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> str:
        """Release a lease; its messages come back now or after delay_ms. Returns the instance."""
        rows = self._call(
            "abandon_orchestration_item", [lock_token, now_ms(), delay_ms, ignore_attempt]
        )
        return str(rows[0][0])

    def renew_orchestration_item_lock(self, lock_token: str, extend_ms: int) -> int:
        """Extend a live lease to now + extend_ms; returns its new end (epoch ms)."""
        rows = self._call("taskhub_renew_orchestration_lease", [lock_token, now_ms(), extend_ms])
        return int(rows[0][0])

    # -- worker queue -------------------------------------------------------

    def enqueue_worker_work(self, work_item: JsonObject) -> None:
        """Queue an ActivityExecute work item (identity, session and tag are read from it)."""
        body = work_item.get("ActivityExecute")
        if not isinstance(body, dict):
            raise ValueError("worker items must be ActivityExecute work items")
        self._call(
            "enqueue_worker_work",
            [
                _json_text(work_item),
                now_ms(),
                body.get("instance"),
                body.get("execution_id"),
                body.get("id"),
                body.get("session_id"),
                body.get("tag"),
            ],
        )

    def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None:
        """Lease the oldest eligible worker item, or None.

        With owner_id, items of sessions this owner holds (or that nobody
        holds) are eligible too, and taking one claims the session.
        """
        tags = tags or TagFilter.default_only()
        rows = self._call(
            "fetch_work_item",
            [
                caller_now_ms if caller_now_ms is not None else now_ms(),
                lock_timeout_ms or self.config.worker_lock_timeout_ms,
                owner_id,
                (session_lock_timeout_ms or self.config.session_lock_timeout_ms)
                if owner_id
                else None,
                list(tags.tags),
                tags.mode,
            ],
        )
        if not rows:
            return None
        work_item, token, attempts = rows[0]
        return WorkItemLease(json.loads(work_item), token, attempts)

    def ack_work_item(self, lock_token: str, completion: JsonObject | None = None) -> None:
        """Delete a leased item and queue its completion (ActivityCompleted / ActivityFailed).

        A None completion acks a cancelled activity. Raises LockLost if the lease is gone.
        """
        instance_id = None
        if completion is not None:
            bodies = list(completion.values())
            if len(bodies) == 1 and isinstance(bodies[0], dict):
                instance_id = bodies[0].get("instance")
            if not instance_id:
                raise ValueError(
                    "a completion must be one work item, {Variant: {...}}, that names its instance"
                )
        self._call(
            "ack_worker",
            [lock_token, instance_id, _json_text(completion) if completion else None, now_ms()],
        )

    def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None:
        self._call("abandon_work_item", [lock_token, now_ms(), delay_ms, ignore_attempt])

    def renew_work_item_lock(self, lock_token: str, extend_ms: int) -> int:
        """Extend a live worker lease to now + extend_ms; returns its new end (epoch ms)."""
        rows = self._call("taskhub_renew_work_item_lease", [lock_token, now_ms(), extend_ms])
        return int(rows[0][0])

    # -- history ------------------------------------------------------------

    def read_history(self, instance_id: str, execution_id: int | None = None) -> list[JsonObject]:
        """Events of one execution (default: the newest), in order."""
        if execution_id is None:
            rows = self._call("fetch_history", [instance_id])
        else:
            rows = self._call("fetch_history_with_execution", [instance_id, execution_id])
        return [json.loads(row[0]) for row in rows]

    def append_history(
        self, instance_id: str, execution_id: int, events: Sequence[JsonObject]
    ) -> None:
        """Append events; an event id that already exists is left as it was."""
        self._call("append_history", [instance_id, execution_id, Jsonb(_history_rows(events))])
