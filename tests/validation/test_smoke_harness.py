"""The harness itself works: create_instance leaves a running instance."""

from __future__ import annotations

from provider import TaskHub
from tests.validation.harness import create_instance


def test_create_instance_leaves_one_started_event(provider: TaskHub) -> None:
    create_instance(provider, "harness-1")
    assert [e["type"] for e in provider.read_history("harness-1")] == ["OrchestrationStarted"]
    assert provider.get_instance_info("harness-1").status == "Running"
