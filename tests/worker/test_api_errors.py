"""A worker on a real hub: an activity whose result JSON cannot hold fails,
clearly and once, instead of crashing the item until it is poisoned; the
loop serves the next item (issue 22, item 5)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import psycopg

from devkit.waiting import wait_until
from devkit.workloads.work_items import activity_execute
from provider import ActivityWorker, AsyncActivityWorker, AsyncTaskHub, TaskHub
from tests.support.db import orchestrator_items


def completions(sql: psycopg.Connection[Any], schema: str, count: int) -> list[dict[str, Any]]:
    """The first `count` completions the worker sent, waiting for them."""
    wait_until(lambda: len(orchestrator_items(sql, schema)) >= count, interval_s=0.01)
    items = orchestrator_items(sql, schema)
    assert len(items) == count, items
    return items


def failure_message(completion: dict[str, Any]) -> str:
    details = completion["ActivityFailed"]["details"]["Application"]
    assert details["retryable"] is False
    return str(details["message"])


def test_a_result_json_cannot_hold_fails_the_activity_once(
    make_hub: Callable[..., TaskHub], hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    hub.enqueue_worker_work(activity_execute("unencodable", 1, name="Tags"))
    hub.enqueue_worker_work(activity_execute("unencodable", 2, name="Echo"))
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10)
    worker.register("Tags", lambda ctx, value: {"a", "b"})
    worker.register("Echo", lambda ctx, value: value)
    with worker:
        failed, completed = completions(sql, hub_schema, 2)
    assert failure_message(failed) == (
        "InvalidInput: activity Tags#1: its result is not JSON-serialisable:"
        " Object of type set is not JSON serializable"
    )
    assert json.loads(completed["ActivityCompleted"]["result"]) == {}
    assert (worker.stats.started, worker.stats.failed, worker.stats.completed) == (2, 1, 1)
    assert hub.get_queue_depths().worker_queue == 0  # acked, not left to be redelivered


def test_the_asyncio_worker_on_a_real_hub_does_the_same(
    database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    async def serve() -> None:
        async with AsyncTaskHub.connect(database_url, hub_schema) as hub:
            await hub.enqueue_worker_work(activity_execute("unencodable", 1, name="Tags"))
            worker = AsyncActivityWorker(hub, concurrency=1, idle_poll_ms=10)

            @worker.activity("Tags")
            async def tags(ctx: Any, value: Any) -> Any:
                return object()

            async with worker:
                await asyncio.to_thread(completions, sql, hub_schema, 1)

    asyncio.run(serve())
    (failed,) = orchestrator_items(sql, hub_schema)
    assert failure_message(failed).startswith(
        "InvalidInput: activity Tags#1: its result is not JSON-serialisable"
    )
