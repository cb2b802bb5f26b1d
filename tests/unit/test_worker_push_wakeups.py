"""Both workers on a hub with push wakeups (a fake WakeupSource): an idle
slot tells the server it waits, then sleeps through a 10 s poll until work
committed later is notified; stop() wakes it and releases the listener;
push_wakeups=False never asks the hub for one. A wakeup that did not work
would show as a test waiting out its 5 s condition, not as a slow pass."""

from __future__ import annotations

import asyncio

from devkit.waiting import wait_until, wait_until_async
from provider import ActivityWorker, AsyncActivityWorker
from provider.worker.core import WorkerOptions
from tests.unit.fakes import (
    LISTENER_PID,
    AsyncPushHub,
    PushHub,
    result_of,
)
from tests.unit.test_wakeup_protocol import asleep

# Idle slots poll every 10 s: only a wakeup brings them in within the test.
SLOW_POLL: WorkerOptions = {"concurrency": 1, "idle_poll_ms": 10_000, "max_idle_poll_ms": 10_000}


def test_a_notification_brings_an_idle_threaded_slot_in_and_stop_releases_the_listener() -> None:
    hub = PushHub()
    worker = ActivityWorker(hub, **SLOW_POLL)
    worker.register("Echo", lambda ctx, value: value)
    with worker:
        # Told the server it waits, then fetched once more: now it sleeps.
        assert hub.wait_for(lambda: hub.waiting_calls == [(LISTENER_PID, True)])
        slots = worker._slots
        assert slots is not None
        wait_until(lambda: asleep(slots) == 1, timeout_s=2, interval_s=0.001)
        token = hub.add_and_notify("Echo", "woken", activity_id=1)
        assert hub.wait_for(lambda: token in hub.acked, timeout_s=5)
    assert result_of(hub.acked[token]) == "woken"
    assert (hub.listeners_asked, hub.listener.releases) == (1, 1)


def test_a_notification_brings_an_idle_asyncio_slot_in_and_stop_releases_the_listener() -> None:
    hub = AsyncPushHub()

    async def main() -> None:
        worker = AsyncActivityWorker(hub, **SLOW_POLL)
        worker.register("Echo", lambda ctx, value: value)
        async with worker:
            await wait_until_async(
                lambda: len(hub.fake.fetches) >= 2, timeout_s=5, interval_s=0.001
            )
            assert hub.fake.waiting_calls == [(LISTENER_PID, True)]
            slots = worker._slots
            assert slots is not None
            await wait_until_async(lambda: asleep(slots) == 1, timeout_s=2, interval_s=0.001)
            token = hub.fake.add_and_notify("Echo", "woken", activity_id=1)
            await wait_until_async(lambda: token in hub.fake.acked, timeout_s=5, interval_s=0.001)

    asyncio.run(asyncio.wait_for(main(), timeout=8))
    assert [result_of(completion) for completion in hub.fake.acked.values()] == ["woken"]
    assert hub.fake.listener.releases == 1


def test_without_push_wakeups_the_worker_polls_and_never_asks_for_a_listener() -> None:
    hub = PushHub()
    with ActivityWorker(hub, concurrency=1, idle_poll_ms=1, push_wakeups=False):
        assert hub.wait_for(lambda: len(hub.fetches) >= 3)
    assert (hub.listeners_asked, hub.waiting_calls, hub.listener.subscribers) == (0, [], [])
