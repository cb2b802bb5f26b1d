"""The provider under a mix of calls, from threads (TaskHub) and from asyncio
tasks (AsyncTaskHub): each round starts an orchestration, leases a turn,
renews and acks it, queues a worker item, leases, renews and acks that, and
lists and finds instances. The rounds of all threads share the hub's queues,
so a turn leased may be another thread's instance (its second turn, the
activity's completion, ends it).

One round is a plan of calls (a generator), run by either face's driver: the
same calls, in the same order, on both. A failed call ends its round.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    event,
    metadata,
    orchestration_started,
)
from drills.pooler_drill.tally import Tally
from provider import AsyncTaskHub, ExecutionMetadata, OrchestrationItem, TaskHub

ORCHESTRATION = "DrillOrder"
LOCK_MS = 30_000
ACTIVITY_ID = 2
PAGE = 20


@dataclass(frozen=True)
class Call:
    """One hub method and its arguments."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Round = Generator[Call, Any, None]


def _turn(item: OrchestrationItem) -> dict[str, Any]:
    """The ack of a leased turn: the first starts the instance; a later one
    (the activity's completion) completes it."""
    instance = item.instance_id
    if not item.history:
        return {
            "history_delta": [orchestration_started(instance, ORCHESTRATION)],
            "metadata": metadata(ORCHESTRATION),
        }
    done = event(len(item.history) + 1, instance, "OrchestrationCompleted", output='"done"')
    return {
        "history_delta": [done],
        "metadata": ExecutionMetadata(status="Completed", output='"done"'),
    }


def mixed_round(instance: str, n: int) -> Round:
    """The calls of one round; each yield is a call, its result sent back."""
    yield Call("start_orchestration", (instance, ORCHESTRATION, {"n": n}))
    item = yield Call("fetch_orchestration_item", (LOCK_MS,))
    if item is not None:
        yield Call("renew_orchestration_item_lock", (item.lock_token, LOCK_MS))
        yield Call("ack_orchestration_item", (item.lock_token, item.execution_id), _turn(item))
    yield Call("enqueue_worker_work", (activity_execute(instance, ACTIVITY_ID),))
    lease = yield Call("fetch_work_item", (LOCK_MS,))
    if lease is not None:
        body = lease.work_item["ActivityExecute"]
        yield Call("renew_work_item_lock", (lease.lock_token, LOCK_MS))
        completion = activity_completed(body["instance"], body["id"], f'"{n}"')
        yield Call("ack_work_item", (lease.lock_token, completion))
    yield Call("get_queue_depths")
    yield Call("list_instances")
    yield Call("find_instances", kwargs={"limit": PAGE})
    yield Call("find_instances", kwargs={"instance_id": instance})


def run_round(hub: TaskHub, plan: Round, tally: Tally) -> None:
    """Drive one round on the blocking face."""
    result: Any = None
    try:
        while True:
            call = plan.send(result)
            tally.called()
            try:
                result = getattr(hub, call.method)(*call.args, **call.kwargs)
            except Exception as error:
                tally.failed(error)
                return
    except StopIteration:
        return


async def run_round_async(hub: AsyncTaskHub, plan: Round, tally: Tally) -> None:
    """Drive one round on the asyncio face."""
    result: Any = None
    try:
        while True:
            call = plan.send(result)
            tally.called()
            try:
                result = await getattr(hub, call.method)(*call.args, **call.kwargs)
            except Exception as error:
                tally.failed(error)
                return
    except StopIteration:
        return


def threads(hub: TaskHub, prefix: str, count: int, seconds: float) -> Tally:
    """`count` threads running rounds on one hub for `seconds`."""
    tally = Tally()
    deadline = time.monotonic() + seconds

    def loop(thread: int) -> None:
        n = 0
        while time.monotonic() < deadline:
            n += 1
            run_round(hub, mixed_round(f"{prefix}-t{thread}-{n}", n), tally)

    running = [threading.Thread(target=loop, args=(t,)) for t in range(count)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    return tally


async def tasks(hub: AsyncTaskHub, prefix: str, count: int, seconds: float) -> Tally:
    """`count` asyncio tasks running rounds on one hub for `seconds`."""
    tally = Tally()
    deadline = time.monotonic() + seconds

    async def loop(task: int) -> None:
        n = 0
        while time.monotonic() < deadline:
            n += 1
            await run_round_async(hub, mixed_round(f"{prefix}-a{task}-{n}", n), tally)

    await asyncio.gather(*(loop(t) for t in range(count)))
    return tally


def both_faces(
    url: str, schema: str, settings: dict[str, Any], workers: int, seconds: float
) -> tuple[Tally, Tally]:
    """The blocking face from `workers` threads, then the asyncio face from as
    many tasks, each for `seconds`, with the hub `settings`. A hub that cannot
    open is one error of its face."""
    sync = Tally()
    try:
        with TaskHub.connect(url, schema, pool_max_size=workers, **settings) as hub:
            sync = threads(hub, f"{schema}-sync", workers, seconds)
    except Exception as error:
        sync.failed(error)

    async def run() -> Tally:
        async with AsyncTaskHub.connect(url, schema, pool_max_size=workers, **settings) as hub:
            return await tasks(hub, f"{schema}-async", workers, seconds)

    try:
        asynchronous = asyncio.run(run())
    except Exception as error:
        asynchronous = Tally()
        asynchronous.failed(error)
    return sync, asynchronous
