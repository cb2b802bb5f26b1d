"""Waiting for something to happen, instead of sleeping a guess at how long it takes.

    (run,) = wait_until(lambda: runs(sql, schema), message="the worker to start the item")

A test that sleeps "long enough" is slow on a fast machine and fails on a slow
one; a test that waits for the condition it needs ends as soon as it holds. A
plain `time.sleep` stays only where time itself is the subject: a lease that
must run out, a visibility delay, a "nothing happens meanwhile" check, a
handler that stands for slow work; each says so where it sleeps.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

TIMEOUT_S = 15.0
INTERVAL_S = 0.02


def wait_until(
    condition: Callable[[], T | None],
    timeout_s: float = TIMEOUT_S,
    interval_s: float = INTERVAL_S,
    message: str | None = None,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Call `condition` every interval_s until it returns a truthy value, and return
    that value. After timeout_s, raise AssertionError naming what was awaited
    (`message`, or the condition's source) and the last value seen. Exceptions of
    the types in `ignoring` count as "not yet" (a server restarting); any other
    exception propagates at once."""
    deadline = time.monotonic() + timeout_s
    while True:
        outcome = _attempt(condition, ignoring)
        if not isinstance(outcome, _NotYet):
            return outcome
        if time.monotonic() >= deadline:
            raise _timed_out(condition, timeout_s, message, outcome)
        time.sleep(max(0.0, min(interval_s, deadline - time.monotonic())))


async def wait_until_async(
    condition: Callable[[], T | None],
    timeout_s: float = TIMEOUT_S,
    interval_s: float = INTERVAL_S,
    message: str | None = None,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """wait_until on an event loop: the loop runs other tasks between the checks."""
    deadline = time.monotonic() + timeout_s
    while True:
        outcome = _attempt(condition, ignoring)
        if not isinstance(outcome, _NotYet):
            return outcome
        if time.monotonic() >= deadline:
            raise _timed_out(condition, timeout_s, message, outcome)
        await asyncio.sleep(max(0.0, min(interval_s, deadline - time.monotonic())))


class _NotYet:
    """A check that did not hold: the falsy value it returned, or the ignored error."""

    def __init__(self, value: object = None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error


def _attempt(
    condition: Callable[[], T | None], ignoring: tuple[type[BaseException], ...]
) -> T | _NotYet:
    try:
        value = condition()
    except ignoring as error:
        return _NotYet(error=error)
    return value if value else _NotYet(value)


def _timed_out(
    condition: Callable[[], object], timeout_s: float, message: str | None, last: _NotYet
) -> AssertionError:
    seen = f"error {last.error!r}" if last.error is not None else repr(last.value)
    if len(seen) > 500:
        seen = seen[:500] + "..."
    error = AssertionError(
        f"not met within {timeout_s:g} s: {message or _describe(condition)} (last seen: {seen})"
    )
    error.__cause__ = last.error
    return error


def _describe(condition: Callable[[], object]) -> str:
    """The source line of a lambda, else the function's name."""
    name = getattr(condition, "__qualname__", repr(condition))
    if "<lambda>" in name:
        try:
            return " ".join(inspect.getsource(condition).split())[:200]
        except (OSError, TypeError):
            pass
    return str(name)
