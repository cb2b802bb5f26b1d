"""duroxide provider validation suite, §3.9 instance_locking.

One lease per instance: while an instance is leased no other fetch gets it,
messages that arrive during the lease wait for the next turn, and an ack
removes only the messages its turn was given. The multi-threaded tests share
one TaskHub (and so its connection pool) between threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import pytest

from provider import OrchestrationItem, RetryableError, TaskHub, TaskHubError
from tests.support.server_clock import MoveClock
from tests.validation.harness import (
    LONG_LOCK,
    LT,
    PAST_LT_MS,
    activity_completed,
    create_instance,
    fetch_o,
    meta_nv,
    start_orchestration,
)

T = TypeVar("T")

INSTANCE = "instance-A"


def run_concurrently(count: int, task: Callable[[int], T]) -> list[T]:
    """task(0) .. task(count - 1), each on its own thread; results in index order."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(task, i) for i in range(count)]
        return [future.result() for future in futures]


def completion_ids(item: OrchestrationItem) -> list[int]:
    return [
        message["ActivityCompleted"]["id"]
        for message in item.messages
        if "ActivityCompleted" in message
    ]


def test_exclusive_instance_lock(provider: TaskHub, move_clock: MoveClock) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    first = fetch_o(provider, LT)
    assert provider.fetch_orchestration_item(LT) is None
    move_clock(provider, PAST_LT_MS)
    second = fetch_o(provider)
    assert second.instance_id == INSTANCE
    assert second.lock_token != first.lock_token


def test_lock_token_uniqueness(provider: TaskHub) -> None:
    for i in range(5):
        provider.enqueue_for_orchestrator(start_orchestration(f"inst-{i}"))
    tokens = [fetch_o(provider).lock_token for _ in range(5)]
    assert len(set(tokens)) == 5


def test_invalid_lock_token_rejection(provider: TaskHub) -> None:
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    fetch_o(provider)
    with pytest.raises(TaskHubError):
        provider.ack_orchestration_item("invalid-token", 1)
    with pytest.raises(TaskHubError):
        provider.abandon_orchestration_item("invalid-token", delay_ms=None, ignore_attempt=False)
    assert provider.fetch_orchestration_item(LONG_LOCK) is None


def test_concurrent_instance_fetching(provider: TaskHub) -> None:
    instances = [f"concurrent-{i}" for i in range(10)]
    for instance in instances:
        provider.enqueue_for_orchestrator(start_orchestration(instance))

    def fetch(i: int) -> str | None:
        time.sleep(i * 30 / 1000)  # staggered starts, as in the suite: overlapping fetches
        item = provider.fetch_orchestration_item(LONG_LOCK)
        return item.instance_id if item else None

    fetched = run_concurrently(10, fetch)
    assert None not in fetched
    assert set(fetched) == set(instances)


def test_completions_arriving_during_lock_blocked(provider: TaskHub, move_clock: MoveClock) -> None:
    """Messages of an expired lease come back together with those that arrived meanwhile."""
    provider.enqueue_for_orchestrator(start_orchestration(INSTANCE))
    fetch_o(provider, LT)
    for i in (1, 2, 3):
        provider.enqueue_for_orchestrator(activity_completed(INSTANCE, i, f"result-{i}"))
    assert provider.fetch_orchestration_item(LT) is None

    move_clock(provider, PAST_LT_MS)
    item = fetch_o(provider, LT)
    assert item.instance_id == INSTANCE
    assert len(item.messages) == 4
    assert completion_ids(item) == [1, 2, 3]


def test_cross_instance_lock_isolation(provider: TaskHub) -> None:
    create_instance(provider, "instance-A")
    create_instance(provider, "instance-B")
    provider.enqueue_for_orchestrator(start_orchestration("instance-A"))
    provider.enqueue_for_orchestrator(start_orchestration("instance-B"))

    item_a = fetch_o(provider)
    assert item_a.instance_id == "instance-A"
    item_b = fetch_o(provider)
    assert item_b.instance_id == "instance-B"
    provider.ack_orchestration_item(item_b.lock_token, 1, metadata=meta_nv())

    provider.enqueue_for_orchestrator(activity_completed("instance-B", 1, "done"))
    item_b = fetch_o(provider)  # instance-A is still leased
    assert item_b.instance_id == "instance-B"


def test_message_tagging_during_lock(provider: TaskHub) -> None:
    create_instance(provider, INSTANCE)
    provider.enqueue_for_orchestrator(activity_completed(INSTANCE, 1))
    provider.enqueue_for_orchestrator(activity_completed(INSTANCE, 2))
    item = fetch_o(provider)
    assert len(item.messages) == 2

    provider.enqueue_for_orchestrator(activity_completed(INSTANCE, 3))
    provider.ack_orchestration_item(item.lock_token, 1)

    item = fetch_o(provider)
    assert len(item.messages) == 1
    assert completion_ids(item) == [3]


def test_ack_only_affects_locked_messages(provider: TaskHub) -> None:
    create_instance(provider, INSTANCE)
    provider.enqueue_for_orchestrator(activity_completed(INSTANCE, 1))
    item = fetch_o(provider)
    assert len(item.messages) == 1

    provider.enqueue_for_orchestrator(activity_completed(INSTANCE, 2))
    provider.enqueue_for_orchestrator(activity_completed(INSTANCE, 3))
    assert provider.fetch_orchestration_item(LONG_LOCK) is None
    provider.ack_orchestration_item(item.lock_token, 1)

    item = fetch_o(provider)
    assert item.instance_id == INSTANCE
    assert len(item.messages) == 2
    assert completion_ids(item) == [2, 3]


def test_multi_threaded_lock_contention(provider: TaskHub) -> None:
    instance = "contention-instance"
    provider.enqueue_for_orchestrator(start_orchestration(instance))

    def fetch(i: int) -> OrchestrationItem | None:
        time.sleep(i * 5 / 1000)  # staggered starts, as in the suite: overlapping fetches
        return provider.fetch_orchestration_item(LONG_LOCK)

    winners = [item for item in run_concurrently(10, fetch) if item is not None]
    assert len(winners) == 1
    assert winners[0].instance_id == instance
    assert provider.fetch_orchestration_item(LONG_LOCK) is None


def test_multi_threaded_no_duplicate_processing(provider: TaskHub) -> None:
    """40 threads race for 20 instances; none is leased twice.

    A fetch that still fails after its retries fails the test here; the Rust
    suite drops such errors silently (it only counts the items returned).
    """
    instance_count = 20
    for i in range(instance_count):
        provider.enqueue_for_orchestrator(start_orchestration(f"dup-test-{i}"))

    def fetch(i: int) -> str | None:
        time.sleep((i * 3) % 50 / 1000)  # staggered starts, as in the suite
        for attempt in range(3):
            try:
                item = provider.fetch_orchestration_item(LONG_LOCK)
            except RetryableError:
                if attempt == 2:
                    raise
                time.sleep(10 * (attempt + 1) / 1000)  # back off before the retry
                continue
            return item.instance_id if item else None
        return None

    fetched = [name for name in run_concurrently(instance_count * 2, fetch) if name is not None]
    assert len(set(fetched)) == len(fetched), "an instance was leased twice"
    assert len(fetched) <= instance_count


def test_multi_threaded_lock_expiration_recovery(provider: TaskHub, move_clock: MoveClock) -> None:
    instance = "expiration-instance"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    barrier = threading.Barrier(2)
    leased = threading.Event()

    def holder() -> OrchestrationItem:
        """Takes the lease and never acks it (a worker that crashed)."""
        barrier.wait()
        item = fetch_o(provider, LT)
        leased.set()
        assert item.instance_id == instance
        return item

    def contender() -> OrchestrationItem | None:
        barrier.wait()
        assert leased.wait(10)
        return provider.fetch_orchestration_item(LT)

    with ThreadPoolExecutor(max_workers=2) as pool:
        held = pool.submit(holder)
        contended = pool.submit(contender)
        first = held.result()
        assert contended.result() is None, "the instance should still be locked"
    move_clock(provider, PAST_LT_MS)  # the holder's lease ends: a recoverer takes it over
    second = provider.fetch_orchestration_item(LT)

    assert second is not None
    assert second.instance_id == instance
    assert second.lock_token != first.lock_token
