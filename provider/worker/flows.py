"""A flow is a generator of steps: what to do, written once, with nothing
in it that calls the hub, blocks or awaits. A worker performs each step
and sends its result back in (or raises its error at the step), by calls
(`drive`, the threaded worker) or by awaits (`drive_async`, the asyncio
one). The flows: provider/worker/item_flow.py (one item),
provider/worker/slot_loop.py (a slot and the session heartbeat)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

S = TypeVar("S")  # the steps a flow yields
T = TypeVar("T")  # what it returns


@dataclass
class _Progress(Generic[S]):
    """Where a flow is: the reply or the error its last step gets back."""

    flow: Generator[S, Any, Any]
    reply: Any = None
    error: Exception | None = None
    result: Any = None  # the flow's value, once it has ended

    def next_step(self) -> S | None:
        """The flow's next step; None once it has ended (its value: `result`)."""
        try:
            step = (
                self.flow.throw(self.error)
                if self.error is not None
                else self.flow.send(self.reply)
            )
        except StopIteration as done:
            self.result = done.value
            return None
        self.reply, self.error = None, None
        return step


def drive(flow: Generator[S, Any, T], perform: Callable[[S], Any]) -> T:
    """Run a flow, performing each of its steps with a call. A step's error
    is raised in the flow, where it yielded the step: the flow decides which
    errors it handles (an Exception only: a KeyboardInterrupt ends the drive)."""
    progress: _Progress[S] = _Progress(flow)
    while (step := progress.next_step()) is not None:
        try:
            progress.reply = perform(step)
        except Exception as failed:
            progress.error = failed
    result: T = progress.result
    return result


async def drive_async(flow: Generator[S, Any, T], perform: Callable[[S], Awaitable[Any]]) -> T:
    """Run a flow, performing each of its steps with an await (as `drive`;
    a cancellation of the task is no step's error: it ends the drive)."""
    progress: _Progress[S] = _Progress(flow)
    while (step := progress.next_step()) is not None:
        try:
            progress.reply = await perform(step)
        except Exception as failed:
            progress.error = failed
    result: T = progress.result
    return result
