"""The harness's duroxide Client on one side, riding out server restarts."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import duroxide

T = TypeVar("T")
RETRY_FOR_S = 90.0  # longer than an immediate restart with crash recovery
RETRY_PAUSE_S = 0.25


class HarnessClient:
    def __init__(self, url: str, schema: str) -> None:
        provider = _retrying(lambda: duroxide.PostgresProvider.connect_with_schema(url, schema))
        self._client = duroxide.Client(provider)

    def start(self, instance: str, name: str, input: Any) -> None:
        """Start an instance once. A start whose response was lost may have
        happened: then the instance exists and is not started again."""

        def attempt() -> None:
            try:
                self._client.start_orchestration(instance, name, input)
            except RuntimeError:
                if self.status(instance).status == "NotFound":
                    raise

        _retrying(attempt)

    def status(self, instance: str) -> Any:
        """duroxide's OrchestrationResult: status, output (parsed), error."""
        return _retrying(lambda: self._client.get_status(instance))


def _retrying(call: Callable[[], T]) -> T:
    deadline = time.monotonic() + RETRY_FOR_S
    while True:
        try:
            return call()
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(RETRY_PAUSE_S)
