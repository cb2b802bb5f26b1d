"""Stepping a flow (provider/worker/flows.py) by hand, for the table-driven
tests of item_flow and slot_loop: no database, no threads, no clock. A
script is a list of rows, each the step the flow must ask for next and
what that step gives back: a value sent in, an Exception raised at the
step, or STOP (or stopped(value)): the worker's stop came in while the step
ran. After the last row the flow must end."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Stopped:
    """The stop came in while the step ran; then it gave back `reply`."""

    reply: Any = None


STOP = Stopped()


def stopped(reply: Any) -> Stopped:
    return Stopped(reply)


class StopFlag:
    """The worker's stop flag, as a flow reads it (`stopping()`)."""

    def __init__(self) -> None:
        self.is_set = False

    def __call__(self) -> bool:
        return self.is_set


# What a row expects: a step (==), a step's type, or a predicate of the step.
Expect = Any
Row = tuple[Expect, Any]


def matches(step: Any, expected: Expect) -> bool:
    if isinstance(expected, type):
        return isinstance(step, expected)
    if callable(expected):
        return bool(expected(step))
    return bool(step == expected)


def play(flow: Generator[Any, Any, T], script: Sequence[Row], stop: StopFlag | None = None) -> T:
    """Step `flow` through `script`; return the flow's value once it ends."""
    reply: Any = None
    error: Exception | None = None
    for n, (expected, answer) in enumerate(script):
        step = _next(flow, reply, error, f"row {n} ({expected!r})")
        assert matches(step, expected), f"row {n}: expected {expected!r}, got {step!r}"
        if isinstance(answer, Stopped):
            assert stop is not None, "a script that stops needs the flow's StopFlag"
            stop.is_set = True
            answer = answer.reply
        reply, error = (None, answer) if isinstance(answer, Exception) else (answer, None)
    try:
        step = flow.throw(error) if error is not None else flow.send(reply)
    except StopIteration as done:
        result: T = done.value
        return result
    raise AssertionError(f"the flow asked for a step the script does not have: {step!r}")


def _next(flow: Generator[Any, Any, Any], reply: Any, error: Exception | None, row: str) -> Any:
    try:
        return flow.throw(error) if error is not None else flow.send(reply)
    except StopIteration:
        raise AssertionError(f"the flow ended before {row}") from None
