"""Who hears of each procedure call: its operation, duration and failure.

The metrics (provider.metrics) add an observer; with none, a call costs one
look at an empty list.
"""

from __future__ import annotations

from collections.abc import Callable

from provider.errors import TaskHubError

# (schema, operation, seconds, the failure or None)
CallObserver = Callable[[str, str, float, TaskHubError | None], None]

_observers: list[CallObserver] = []


def add_call_observer(observer: CallObserver) -> None:
    if observer not in _observers:
        _observers.append(observer)


def remove_call_observer(observer: CallObserver) -> None:
    if observer in _observers:
        _observers.remove(observer)


def observe_call(schema: str, operation: str, seconds: float, failure: TaskHubError | None) -> None:
    for observer in _observers:
        observer(schema, operation, seconds, failure)
