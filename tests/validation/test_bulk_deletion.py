"""duroxide provider validation suite, §3.2 bulk_deletion (4 tests).

delete_instance_bulk deletes ended root instances (with their sub-orchestration
trees) chosen by an id allowlist, a completed-before cutoff (epoch ms) and a
limit; running instances are skipped silently.
"""

from __future__ import annotations

from provider import TaskHub, now_ms
from tests.validation.harness import create_completed_instance, create_instance, instance_exists


def test_delete_instance_bulk_filter_combinations(provider: TaskHub) -> None:
    ids = [f"bulk-del-filter-{i}" for i in range(5)]
    for instance in ids:
        create_completed_instance(provider, instance)

    result = provider.delete_instance_bulk(instance_ids=ids[:2])
    assert result.instances_deleted == 2
    assert not instance_exists(provider, ids[0])
    assert not instance_exists(provider, ids[1])
    assert instance_exists(provider, ids[2])

    result = provider.delete_instance_bulk(instance_ids=["does-not-exist-1", "does-not-exist-2"])
    assert result.instances_deleted == 0

    result = provider.delete_instance_bulk()
    assert result.instances_deleted >= 3
    assert not any(instance_exists(provider, i) for i in ids[2:])


def test_delete_instance_bulk_safety_and_limits(provider: TaskHub) -> None:
    completed = ["bulk-del-safe-completed-1", "bulk-del-safe-completed-2"]
    running = ["bulk-del-safe-running-1", "bulk-del-safe-running-2"]
    for instance in completed:
        create_completed_instance(provider, instance)
    for instance in running:
        create_instance(provider, instance)

    result = provider.delete_instance_bulk(instance_ids=completed + running)
    assert result.instances_deleted == 2
    assert all(instance_exists(provider, i) for i in running)

    for i in range(4):
        create_completed_instance(provider, f"bulk-del-batch-{i}")
    assert provider.delete_instance_bulk(limit=2).instances_deleted == 2
    assert provider.delete_instance_bulk(limit=2).instances_deleted == 2
    assert provider.delete_instance_bulk(limit=2).instances_deleted == 0


def test_delete_instance_bulk_completed_before_filter(provider: TaskHub) -> None:
    ids = ["bulk-del-time-1", "bulk-del-time-2"]
    # The filter is strict (completed_at < cutoff). now_ms() truncates to the
    # ms, and the hub's clock (taskhub_clock_ms) rounds to it: a completion
    # can read up to 1 ms past a now_ms() taken after it (PostgreSQL 15 under
    # load read it so). No completion is before `before_creation`, and every
    # one is before 2 ms after the last.
    before_creation = now_ms()
    for instance in ids:
        create_completed_instance(provider, instance)
    after_creation = now_ms() + 2

    result = provider.delete_instance_bulk(instance_ids=ids, completed_before_ms=before_creation)
    assert result.instances_deleted == 0
    assert all(instance_exists(provider, i) for i in ids)

    result = provider.delete_instance_bulk(instance_ids=ids, completed_before_ms=after_creation)
    assert result.instances_deleted == 2
    assert not any(instance_exists(provider, i) for i in ids)


def test_delete_instance_bulk_cascades_to_children(provider: TaskHub) -> None:
    parent1, child1 = "bulk-del-cascade-parent1", "bulk-del-cascade-child1"
    parent2 = "bulk-del-cascade-parent2"
    children2 = [f"bulk-del-cascade-child2{suffix}" for suffix in "abc"]
    standalone = "bulk-del-cascade-standalone"
    create_completed_instance(provider, parent1)
    create_completed_instance(provider, child1, parent1)
    create_completed_instance(provider, parent2)
    for child in children2:
        create_completed_instance(provider, child, parent2)
    create_completed_instance(provider, standalone)
    everything = [parent1, child1, parent2, *children2, standalone]
    assert all(instance_exists(provider, i) for i in everything)

    result = provider.delete_instance_bulk(instance_ids=[parent1, parent2, standalone])
    # 3 roots + 1 child of parent1 + 3 children of parent2
    assert result.instances_deleted == 7
    assert not any(instance_exists(provider, i) for i in everything)
