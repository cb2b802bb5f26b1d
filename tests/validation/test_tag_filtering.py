"""Port of duroxide's provider validation suite, §3.19 tag_filtering (10 tests).

A worker item may carry a tag; a worker fetches with a TagFilter choosing
untagged items (default_only), items with one of some tags (only),
both (default_and), everything (any) or nothing (none).
"""

from __future__ import annotations

from typing import Any

from provider import ExecutionMetadata, TagFilter, TaskHub, WorkItemLease
from tests.validation.harness import (
    LONG_LOCK,
    activity_execute,
    fetch_o,
    start_orchestration,
    started,
)

ITEM_LOCK = 5_000


def tagged_activity(instance: str, activity_id: int, tag: str | None) -> dict[str, Any]:
    """TA(X, id, tag): ActivityExecute "Activity{id}" with that tag."""
    return activity_execute(instance, activity_id, name=f"Activity{activity_id}", tag=tag)


def enqueue_tagged(provider: TaskHub, *tags: str | None, instance: str = "tag-inst") -> None:
    """Enqueue TA(instance, i, tags[i-1]) for i = 1, 2, ..."""
    for activity_id, tag in enumerate(tags, start=1):
        provider.enqueue_worker_work(tagged_activity(instance, activity_id, tag))


def fetch(provider: TaskHub, tags: TagFilter, lock_ms: int = ITEM_LOCK) -> WorkItemLease | None:
    return provider.fetch_work_item(lock_ms, tags=tags)


def must_fetch(provider: TaskHub, tags: TagFilter, lock_ms: int = ITEM_LOCK) -> WorkItemLease:
    lease = fetch(provider, tags, lock_ms)
    assert lease is not None, f"expected an item for {tags}"
    return lease


def body(lease: WorkItemLease) -> dict[str, Any]:
    execute = lease.work_item["ActivityExecute"]
    assert isinstance(execute, dict)
    return execute


def test_default_only_fetches_untagged(provider: TaskHub) -> None:
    enqueue_tagged(provider, None, "gpu", None)
    first = must_fetch(provider, TagFilter.default_only())
    assert body(first)["id"] == 1
    assert body(first).get("tag") is None
    second = must_fetch(provider, TagFilter.default_only())
    assert body(second)["id"] == 3
    assert fetch(provider, TagFilter.default_only()) is None


def test_tags_fetches_only_matching(provider: TaskHub) -> None:
    enqueue_tagged(provider, None, "gpu", "cpu", "gpu")
    gpu = TagFilter.only("gpu")
    assert body(must_fetch(provider, gpu))["id"] == 2
    assert body(must_fetch(provider, gpu))["id"] == 4
    assert fetch(provider, gpu) is None


def test_default_and_fetches_untagged_and_matching(provider: TaskHub) -> None:
    enqueue_tagged(provider, None, "gpu", "cpu")
    default_and_gpu = TagFilter.default_and("gpu")
    assert body(must_fetch(provider, default_and_gpu))["id"] == 1
    second = must_fetch(provider, default_and_gpu)
    assert body(second)["id"] == 2
    assert body(second).get("tag") == "gpu"
    assert fetch(provider, default_and_gpu) is None


def test_none_filter_returns_nothing(provider: TaskHub) -> None:
    enqueue_tagged(provider, None, "gpu")
    assert fetch(provider, TagFilter.none()) is None


def test_multi_tag_filter(provider: TaskHub) -> None:
    enqueue_tagged(provider, "gpu", "tpu", "cpu", None)
    gpu_tpu = TagFilter.only("gpu", "tpu")
    assert body(must_fetch(provider, gpu_tpu)).get("tag") == "gpu"
    assert body(must_fetch(provider, gpu_tpu)).get("tag") == "tpu"
    assert fetch(provider, gpu_tpu) is None


def test_tag_round_trip_preservation(provider: TaskHub) -> None:
    enqueue_tagged(provider, "gpu")
    lease = must_fetch(provider, TagFilter.only("gpu"))
    assert body(lease).get("tag") == "gpu"
    assert body(lease)["name"] == "Activity1"


def test_any_filter_fetches_everything(provider: TaskHub) -> None:
    for activity_id, tag in ((1, None), (2, "gpu"), (3, "cpu")):
        provider.enqueue_worker_work(tagged_activity(f"any-inst-{activity_id}", activity_id, tag))
    for _ in range(3):
        must_fetch(provider, TagFilter.any())
    assert fetch(provider, TagFilter.any()) is None


def test_tag_survives_abandon_and_refetch(provider: TaskHub) -> None:
    enqueue_tagged(provider, "gpu", None)
    gpu = TagFilter.only("gpu")
    first = must_fetch(provider, gpu)
    assert body(first)["id"] == 1
    provider.abandon_work_item(first.lock_token, ignore_attempt=False)

    again = must_fetch(provider, gpu)
    assert body(again)["id"] == 1
    assert body(again).get("tag") == "gpu"
    assert again.attempt_count >= 2
    assert again.lock_token != first.lock_token

    untagged = must_fetch(provider, TagFilter.default_only())
    assert body(untagged)["id"] == 2
    assert body(untagged).get("tag") is None


def test_multi_runtime_tag_isolation(provider: TaskHub) -> None:
    """Runtimes with different filters share one queue; each sees only its items."""
    enqueue_tagged(provider, None, "gpu", "cpu", "fpga", "gpu")

    default_only = TagFilter.default_only()
    assert body(must_fetch(provider, default_only, LONG_LOCK))["id"] == 1
    assert fetch(provider, default_only, LONG_LOCK) is None

    gpu_cpu = TagFilter.only("gpu", "cpu")
    ids = {body(must_fetch(provider, gpu_cpu, LONG_LOCK))["id"] for _ in range(2)}
    assert ids == {2, 3}

    cpu_fpga = TagFilter.only("cpu", "fpga")
    assert body(must_fetch(provider, cpu_fpga, LONG_LOCK))["id"] == 4
    assert fetch(provider, cpu_fpga, LONG_LOCK) is None

    assert body(must_fetch(provider, TagFilter.any(), LONG_LOCK))["id"] == 5
    assert fetch(provider, TagFilter.any(), LONG_LOCK) is None


def test_tag_preserved_through_ack_orchestration_item(provider: TaskHub) -> None:
    """A tag set on a worker item scheduled by ack_orchestration_item reaches the queue."""
    instance = "tag-ack-inst"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance)],
        worker_items=[
            activity_execute(instance, 10, name="GpuWork", tag="gpu"),
            activity_execute(instance, 11, name="CpuWork"),
        ],
        metadata=ExecutionMetadata(),
    )

    untagged = must_fetch(provider, TagFilter.default_only(), LONG_LOCK)
    assert body(untagged)["name"] == "CpuWork"
    assert body(untagged).get("tag") is None
    provider.ack_work_item(untagged.lock_token, None)
    assert fetch(provider, TagFilter.default_only(), LONG_LOCK) is None

    gpu = must_fetch(provider, TagFilter.only("gpu"), LONG_LOCK)
    assert body(gpu)["name"] == "GpuWork"
    assert body(gpu).get("tag") == "gpu"
