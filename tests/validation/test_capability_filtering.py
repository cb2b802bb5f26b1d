"""Provider validation: capability_filtering (duroxide-core-contract §3.4).

Fetches filtered by the pinned runtime version of an instance's current
execution, pinned versions stored through the ack's metadata, and fetches of
an instance whose stored history is not valid JSON.

Where duroxide's suite once expected a fetch of corrupted history to fail, the
catalogue (and our provider) returns the item with `history_error` set and an
empty history, so that the runtime can poison it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

from devkit.waiting import wait_until
from provider import (
    ExecutionMetadata,
    OrchestrationItem,
    TaskHub,
    TaskHubError,
    VersionRange,
)
from tests.validation.harness import (
    LONG_LOCK,
    continue_as_new,
    event,
    external_raised,
    fetch_o,
    meta_nv,
    start_orchestration,
    started,
)

Version = tuple[int, int, int]
CorruptHistory = Callable[[TaskHub, str], None]
MaxAttemptCount = Callable[[TaskHub, str], int]


def version_range(minimum: Version, maximum: Version) -> VersionRange:
    """F(a, b): a filter with the single inclusive range [a, b]."""
    return VersionRange(minimum=minimum, maximum=maximum)


def dotted(version: Version) -> str:
    return ".".join(str(part) for part in version)


def fetch(
    provider: TaskHub, versions: VersionRange | Sequence[VersionRange] | None = None
) -> OrchestrationItem | None:
    """fetchO with the suite's 30 s lock and an optional filter."""
    return provider.fetch_orchestration_item(LONG_LOCK, versions=versions)


def seed_instance_with_version(provider: TaskHub, instance: str, version: Version) -> None:
    """Start X pinned at `version`, with one visible "ping" queued for it.

    Other instances' items fetched on the way are released afterwards.
    """
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    others: list[str] = []
    while True:
        item = fetch_o(provider)
        if item.instance_id == instance:
            break
        others.append(item.lock_token)

    pinned = dotted(version)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, duroxide_version=pinned)],
        orchestrator_items=[external_raised(instance, "ping")],
        metadata=meta_nv(pinned_duroxide_version=pinned),
    )
    for token in others:
        with contextlib.suppress(TaskHubError):
            provider.abandon_orchestration_item(token, ignore_attempt=True)


def seed_and_corrupt(
    provider: TaskHub, corrupt_history: CorruptHistory, instance: str, version: Version
) -> None:
    seed_instance_with_version(provider, instance, version)
    corrupt_history(provider, instance)


def test_fetch_with_filter_none_returns_any_item(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-1", (1, 2, 3))
    assert fetch(provider) is not None, "no filter returns any item"


def test_fetch_with_compatible_filter_returns_item(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-2", (1, 2, 3))
    assert fetch(provider, version_range((1, 0, 0), (1, 9, 9))) is not None


def test_fetch_with_incompatible_filter_skips_item(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-3", (1, 2, 3))
    assert fetch(provider, version_range((2, 0, 0), (2, 9, 9))) is None


def test_fetch_filter_skips_incompatible_selects_compatible(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-v1", (1, 0, 0))
    seed_instance_with_version(provider, "inst-v2", (2, 0, 0))

    item = fetch(provider, version_range((2, 0, 0), (2, 9, 9)))
    assert item is not None, "the v2 instance should be returned"
    assert item.instance_id == "inst-v2"
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)

    item = fetch(provider, version_range((1, 0, 0), (1, 9, 9)))
    assert item is not None, "the v1 instance should be returned"
    assert item.instance_id == "inst-v1"


def test_fetch_filter_does_not_lock_skipped_instances(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-5", (1, 0, 0))

    assert fetch(provider, version_range((2, 0, 0), (2, 9, 9))) is None
    assert fetch(provider, version_range((0, 0, 0), (1, 9, 9))) is not None, (
        "an incompatible fetch must not lock the instance it skipped"
    )


def test_fetch_filter_null_pinned_version_always_compatible(provider: TaskHub) -> None:
    """An execution with no pinned version (pre-migration data) matches every filter."""
    instance = "inst-null"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, duroxide_version="0.0.0")],
        metadata=meta_nv(pinned_duroxide_version=None),
    )
    provider.enqueue_for_orchestrator(external_raised(instance, "ping"))

    assert fetch(provider, version_range((99, 0, 0), (99, 9, 9))) is not None


def test_fetch_filter_boundary_versions(
    provider: TaskHub, provider_factory: Callable[[], TaskHub]
) -> None:
    both_ends = version_range((1, 0, 0), (1, 9, 99))

    seed_instance_with_version(provider, "v1-low", (1, 0, 0))
    item = fetch(provider, both_ends)
    assert item is not None, "1.0.0 is inside [1.0.0, 1.9.99]"
    assert item.instance_id == "v1-low"
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)

    seed_instance_with_version(provider, "v1-high", (1, 9, 99))
    item = fetch(provider, both_ends)
    assert item is not None, "1.9.99 is inside [1.0.0, 1.9.99]"
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)

    # Just outside, on a fresh provider so the v1 instances cannot interfere.
    other = provider_factory()
    seed_instance_with_version(other, "v2-exact", (2, 0, 0))
    assert fetch(other, both_ends) is None, "2.0.0 is outside [1.0.0, 1.9.99]"
    assert fetch(other) is not None, "v2-exact is fetchable without a filter"


def test_pinned_version_stored_via_ack_metadata(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-8", (3, 1, 4))
    assert fetch(provider, version_range((3, 0, 0), (3, 9, 9))) is not None


def test_pinned_version_immutable_across_ack_cycles(provider: TaskHub) -> None:
    """A later ack without a pinned version leaves the pin as it was."""
    instance = "inst-9"
    seed_instance_with_version(provider, instance, (1, 0, 0))
    up_to_1 = version_range((0, 0, 0), (1, 9, 9))

    item = fetch(provider, up_to_1)
    assert item is not None
    assert item.instance_id == instance
    provider.ack_orchestration_item(item.lock_token, 1, metadata=meta_nv())
    provider.enqueue_for_orchestrator(external_raised(instance, "ping2"))

    assert fetch(provider, up_to_1) is not None, "the pin persists across ack cycles"


def test_continue_as_new_execution_gets_own_pinned_version(provider: TaskHub) -> None:
    """The filter uses the current execution's pin; execution 2 does not inherit 1.0.0."""
    instance = "inst-can"
    seed_instance_with_version(provider, instance, (1, 0, 0))

    item = fetch(provider, version_range((0, 0, 0), (1, 9, 9)))
    assert item is not None
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[event(2, instance, "OrchestrationContinuedAsNew", input="{}")],
        orchestrator_items=[continue_as_new(instance, "TestOrch", "{}", "1.0.0")],
        metadata=meta_nv(status="ContinuedAsNew"),
    )

    item = fetch(provider)
    assert item is not None, "the ContinueAsNew message should be fetched"
    provider.ack_orchestration_item(
        item.lock_token,
        2,
        history_delta=[started(instance, execution_id=2, duroxide_version="2.0.0")],
        metadata=meta_nv(pinned_duroxide_version="2.0.0"),
    )
    provider.enqueue_for_orchestrator(external_raised(instance, "ping"))

    item = fetch(provider, version_range((2, 0, 0), (2, 9, 9)))
    assert item is not None, "execution 2 is pinned at 2.0.0"
    assert item.instance_id == instance
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)

    assert fetch(provider, version_range((1, 0, 0), (1, 9, 9))) is None, (
        "execution 2 must not inherit execution 1's pin"
    )


def test_filter_with_empty_supported_versions_returns_nothing(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-empty", (1, 0, 0))
    assert fetch(provider, []) is None


def test_concurrent_filtered_fetch_no_double_lock(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-conc", (1, 0, 0))
    up_to_1 = version_range((0, 0, 0), (1, 9, 9))

    assert fetch(provider, up_to_1) is not None, "the first fetch leases the instance"
    assert fetch(provider, up_to_1) is None, "the second finds it locked"


def test_ack_stores_pinned_version_via_metadata_update(provider: TaskHub) -> None:
    """A pin sent on a later turn is stored (backfill of pre-migration executions)."""
    instance = "inst-backfill"
    provider.enqueue_for_orchestrator(start_orchestration(instance))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started(instance, duroxide_version="1.2.3")],
        metadata=meta_nv(pinned_duroxide_version=None),
    )

    provider.enqueue_for_orchestrator(external_raised(instance, "ping"))
    item = fetch_o(provider)
    provider.ack_orchestration_item(
        item.lock_token, 1, metadata=meta_nv(pinned_duroxide_version="1.2.3")
    )

    provider.enqueue_for_orchestrator(external_raised(instance, "ping2"))
    assert fetch(provider, version_range((1, 0, 0), (1, 9, 9))) is not None


def test_provider_updates_pinned_version_when_told(provider: TaskHub) -> None:
    """The provider overwrites the pin unconditionally; write-once is the runtime's job."""
    instance = "inst-update"
    seed_instance_with_version(provider, instance, (1, 0, 0))

    item = fetch(provider, version_range((0, 0, 0), (1, 9, 9)))
    assert item is not None
    provider.ack_orchestration_item(
        item.lock_token, 1, metadata=meta_nv(pinned_duroxide_version="2.0.0")
    )
    provider.enqueue_for_orchestrator(external_raised(instance, "ping2"))

    item = fetch(provider, version_range((2, 0, 0), (2, 0, 0)))
    assert item is not None, "the pin should now be 2.0.0"
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)

    assert fetch(provider, version_range((1, 0, 0), (1, 0, 0))) is None, (
        "the pin no longer matches 1.0.0"
    )


def test_fetch_corrupted_history_filtered_vs_unfiltered(
    provider: TaskHub, corrupt_history: CorruptHistory
) -> None:
    instance = "inst-corrupt-39"
    seed_and_corrupt(provider, corrupt_history, instance, (1, 0, 0))

    # Filtered out: no error, nothing returned.
    assert fetch(provider, version_range((2, 0, 0), (2, 9, 9))) is None

    item = fetch(provider)
    assert item is not None, "an unfiltered fetch returns the item"
    assert item.instance_id == instance
    assert item.history_error is not None
    assert item.history == []
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)


def test_fetch_deserialization_error_increments_attempt_count(
    provider: TaskHub, corrupt_history: CorruptHistory, max_attempt_count: MaxAttemptCount
) -> None:
    instance = "inst-deser-41"
    seed_and_corrupt(provider, corrupt_history, instance, (1, 0, 0))

    item = provider.fetch_orchestration_item(50)
    assert item is not None
    assert item.history_error is not None
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=False)

    item = wait_until(lambda: provider.fetch_orchestration_item(50), message="the item back")
    assert item.history_error is not None
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=False)

    attempts = max_attempt_count(provider, instance)
    assert attempts >= 2, f"attempt_count should be >= 2 after two fetches, got {attempts}"


def test_fetch_deserialization_error_eventually_reaches_poison(
    provider: TaskHub, corrupt_history: CorruptHistory, max_attempt_count: MaxAttemptCount
) -> None:
    """The provider keeps counting attempts; poisoning itself is the runtime's job."""
    instance = "inst-poison-42"
    seed_and_corrupt(provider, corrupt_history, instance, (1, 0, 0))

    cycles = 5
    for cycle in range(1, cycles + 1):
        item = wait_until(
            lambda: provider.fetch_orchestration_item(50),
            message=f"fetch #{cycle} to return the item",
        )
        assert item.history_error is not None, f"fetch #{cycle} should report the history error"
        provider.abandon_orchestration_item(item.lock_token, ignore_attempt=False)

    attempts = max_attempt_count(provider, instance)
    assert attempts >= cycles, f"attempt_count should be >= {cycles}, got {attempts}"


def test_fetch_filter_applied_before_history_deserialization(
    provider: TaskHub, corrupt_history: CorruptHistory
) -> None:
    """An excluded instance is skipped without its corrupted history being read."""
    instance = "inst-order-43"
    seed_and_corrupt(provider, corrupt_history, instance, (99, 0, 0))

    assert fetch(provider, version_range((1, 0, 0), (2, 0, 0))) is None

    item = fetch(provider)
    assert item is not None
    assert item.history_error is not None
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)


def test_fetch_single_range_only_uses_first_range(provider: TaskHub) -> None:
    seed_instance_with_version(provider, "inst-range-a", (1, 0, 0))
    seed_instance_with_version(provider, "inst-range-b", (3, 0, 0))
    ranges = [version_range((1, 0, 0), (1, 5, 0)), version_range((3, 0, 0), (3, 5, 0))]

    item = fetch(provider, ranges)
    assert item is not None, "the first range matches inst-range-a"
    assert item.instance_id == "inst-range-a"
    provider.abandon_orchestration_item(item.lock_token, ignore_attempt=True)

    item = fetch(provider, ranges)
    if item is not None:
        assert item.instance_id == "inst-range-a", "the second range must be ignored"


def test_ack_appends_event_to_corrupted_history(
    provider: TaskHub, corrupt_history: CorruptHistory
) -> None:
    """The runtime's poison ack (a Failed event after unreadable history) must commit."""
    instance = "inst-corrupt-ack"
    seed_instance_with_version(provider, instance, (1, 0, 0))
    corrupt_history(provider, instance)

    item = fetch_o(provider)
    assert item.instance_id == instance
    assert item.history_error is not None
    assert item.history == []

    error = item.history_error
    attempts, max_attempts = 4, 3
    details = {
        "Poison": {
            "attempt_count": attempts,
            "max_attempts": max_attempts,
            "message_type": {
                "FailedDeserialization": {
                    "instance": instance,
                    "execution_id": item.execution_id,
                    "error": error,
                }
            },
            "message": error,
        }
    }
    display_message = (
        f"poison: orchestration {instance} history deserialization failed"
        f" after {attempts} attempts (max {max_attempts}): {error}"
    )
    failed = event(99999, instance, "OrchestrationFailed", details=details)
    failed["execution_id"] = item.execution_id

    provider.ack_orchestration_item(
        item.lock_token,
        item.execution_id,
        history_delta=[failed],
        metadata=ExecutionMetadata(
            status="Failed",
            output=display_message,
            orchestration_name=item.orchestration_name,
            orchestration_version=item.orchestration_version,
        ),
    )

    info = provider.get_instance_info(instance)
    assert info.status == "Failed"
    assert info.output is not None
    assert "deserialization failed" in info.output
