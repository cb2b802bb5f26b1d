"""Bad input caught in Python, before any SQL, raises InvalidInput: a
PermanentError like the procedures' refusals (SQLSTATE 22023), and a
ValueError. No database needed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from provider import InvalidInput, PermanentError, TagFilter, TaskHubConfig, errors
from provider.shapes import (
    ExecutionMetadata,
    ack_metadata_json,
    activity_identity,
    completion_instance,
    target_instance,
)
from provider.worker.core import WorkerCore

BAD_INPUT: dict[str, Callable[[], Any]] = {
    "orchestrator item naming no instance": lambda: target_instance({"ExternalRaised": {}}),
    "activity as an orchestrator item": lambda: target_instance({"ActivityExecute": {}}),
    "completion naming no instance": lambda: completion_instance({"ActivityCompleted": {}}),
    "not an ActivityExecute": lambda: activity_identity({"StartOrchestration": {}}),
    "pinned version not x.y.z": lambda: ack_metadata_json(
        ExecutionMetadata(pinned_duroxide_version="one.two"), []
    ),
    "unknown tag mode": lambda: TagFilter(mode="everything"),
    "tag mode without tags": lambda: TagFilter(mode="tags"),
    "worker tags not a TagFilter": lambda: WorkerCore(
        TaskHubConfig(url="postgresql://unused"),
        tags=["gpu"],  # type: ignore[arg-type]
    ),
    "non-positive lock timeout": lambda: TaskHubConfig(
        url="postgresql://unused", orchestration_lock_timeout_ms=0
    ),
    "pool sizes out of order": lambda: TaskHubConfig(
        url="postgresql://unused", pool_min_size=5, pool_max_size=2
    ),
}


@pytest.mark.parametrize("make", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_caught_in_python_is_a_permanent_error(make: Callable[[], Any]) -> None:
    with pytest.raises(InvalidInput) as refused:
        make()
    assert isinstance(refused.value, PermanentError) and isinstance(refused.value, ValueError)
    assert refused.value.sqlstate == "22023" and not refused.value.retryable
    assert refused.value.message


def test_the_procedures_refusals_are_the_same_family() -> None:
    translated = errors.translate("ack_orchestration_item", psycopg.errors.InvalidParameterValue())
    assert isinstance(translated, PermanentError) and translated.sqlstate == "22023"
