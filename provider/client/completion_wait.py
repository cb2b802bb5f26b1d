"""How Client.wait_for_completion waits: when it reads the instance again.

The hub notifies its channel (provider/client/wakeups.py, taskhub_wake)
when a message for an orchestration becomes visible and an 'orchestrator'
listener waits: a start, an event, a cancel, an activity's completion, a
sub-orchestration's end. No notification comes when an instance ends (the
ack of a last turn queues nothing), so each read also counts the messages
queued for the instance, and the wait goes by what it found:

    ended                   done.
    messages queued for it  a turn is due, running, or a timer is set:
                            read again on the poll's ramp (20 ms doubled,
                            at most 1 s), as a wait always did.
    nothing queued          nothing changes it until a message comes for
                            it, and that message wakes the listener: wait
                            for a wakeup (a read every IDLE_CHECK_S all the
                            same, should a notification be lost).

Where no LISTEN can work (a transaction pooler and no listen_url, a hub
before revision 0009, a role that may not say it waits) or while the
listening connection is lost, every pause is the ramp's: polling. On a busy
hub most wakeups are other instances': those in a row that find nothing
for this one are followed on the same ramp, so the wait settles at a read
a second, as a poll does.

A client's waits share one listener per process (Wakeups, queue
'orchestrator'), opened at the client's first wait, closed with the client.
The wait itself is written once (`waiting`, a generator of steps, as the
plans are) and driven by `wait_blocking` or `wait_async`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any

from provider.backoff import Backoff
from provider.client.wakeups import Wakeups
from provider.config import TaskHubConfig
from provider.errors import TaskHubError, WaitTimeout
from provider.logs import fields
from provider.tracing import WaitSpan
from provider.types import InstanceStatus

log = logging.getLogger(__name__)

# A turn due: read every 20 ms at first, then less often, at most every
# second: a quick orchestration is seen at once, a slow one costs a read a second.
WAIT_POLLING = Backoff(first_s=0.02, cap_s=1.0, jitter=0.0)
# Nothing queued and the listener heard: a read this often all the same
# (a notification lost with a connection that died unseen).
IDLE_CHECK_S = 5.0
LISTEN_QUEUE = "orchestrator"  # the wakeups of visible orchestration messages


@dataclass(frozen=True)
class Progress:
    """One read of a waited instance: its status, and how many messages are
    queued for it (a turn due, running, or a timer set)."""

    status: InstanceStatus
    queued_messages: int


# -- the listener's side --------------------------------------------------------


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Ear:
    """A client's subscriber on the process's listener (a wakeups.Subscriber):
    the listening connection's pid, and a count of all it heard (a
    notification, a new connection, a lost one). A wait takes the count
    before it reads, and waits for it to move: nothing heard after its read
    is missed."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self._changed = threading.Condition()
        self._pid: int | None = None
        self._heard = 0
        self._refused = False  # the hub refused taskhub_set_waiting: poll
        self._futures: dict[asyncio.Future[None], asyncio.AbstractEventLoop] = {}

    # wakeups.Subscriber, called on the listener's thread
    def listening(self, pid: int) -> None:
        with self._changed:
            self._pid = pid
        self.notified()

    def lost(self) -> None:
        with self._changed:
            self._pid = None
        self.notified()

    def wake_all(self) -> None:
        self.notified()

    def notified(self) -> None:
        with self._changed:
            self._heard += 1
            self._changed.notify_all()
            futures, self._futures = self._futures, {}
        for future, loop in futures.items():
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(_resolve, future)

    # the waits' side
    def now(self) -> tuple[int, int | None]:
        """What was heard so far, and the pid to say "waiting" for (None: poll)."""
        with self._changed:
            return self._heard, None if self._refused else self._pid

    def connecting(self) -> bool:
        """Whether the listener has yet to (re)connect: its word will come."""
        with self._changed:
            return self._pid is None and not self._refused

    def refused(self, error: TaskHubError) -> None:
        """The hub will not take this client's "waiting": its waits poll."""
        with self._changed:
            said, self._refused = self._refused, True
        if not said:
            log.warning(
                "schema %s: wait_for_completion polls, the hub refused its wakeups: %s",
                self.schema,
                error,
                extra=fields("wakeups.unavailable", schema=self.schema, reason="refused"),
            )

    def wait(self, heard: int, timeout_s: float) -> bool:
        """Whether more than `heard` was heard within timeout_s."""
        with self._changed:
            return self._changed.wait_for(lambda: self._heard != heard, timeout_s)

    async def wait_async(self, heard: int, timeout_s: float) -> bool:
        """As wait, on the caller's event loop (never blocking it)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        with self._changed:
            if self._heard != heard:
                return True
            self._futures[future] = loop
        try:
            await asyncio.wait_for(future, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            with self._changed:
                self._futures.pop(future, None)


class WaitWakeups:
    """A client's share of the process's listener: acquired at its first wait
    where the hub can LISTEN, released when the client closes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wakeups: Wakeups | None = None
        self._ear: Ear | None = None

    def ear(self, config: TaskHubConfig, listen_url: str | None) -> Ear | None:
        """The ear a wait listens with; None where no LISTEN can work."""
        if listen_url is None:
            return None
        with self._lock:
            if self._ear is None:
                self._ear = Ear(config.schema)
                self._wakeups = Wakeups.acquire(config, LISTEN_QUEUE, listen_url)
                self._wakeups.subscribe(self._ear)
            return self._ear

    def close(self) -> None:
        with self._lock:
            wakeups, ear = self._wakeups, self._ear
            self._wakeups = self._ear = None
        if wakeups is not None and ear is not None:
            wakeups.release()
            ear.lost()  # a wait still running polls (its reads fail on the closed pool)


# -- the wait, written once -----------------------------------------------------


@dataclass(frozen=True)
class Arm:
    """Tell the hub that the listener `pid` waits (taskhub_set_waiting): the
    next visible message notifies it. Sends back whether it was told."""

    pid: int


@dataclass(frozen=True)
class Look:
    """Read the instance (a Progress)."""


@dataclass(frozen=True)
class Pause:
    """Sleep `seconds`; with `heard`, until more than that is heard. Sends
    back whether a wakeup ended it."""

    seconds: float
    heard: int | None = None


WaitStep = Arm | Look | Pause
WaitPlan = Generator[WaitStep, Any, InstanceStatus]


def timed_out(status: InstanceStatus, timeout_s: float) -> WaitTimeout:
    return WaitTimeout(
        "wait_for_completion",
        f"instance {status.instance_id} is still {status.status} after {timeout_s} s",
    )


def waiting(timeout_s: float, ear: Ear | None, span: WaitSpan) -> WaitPlan:
    """The wait: read, then pause as the module's docstring says, until the
    instance has ended (its status) or timeout_s has passed (WaitTimeout)."""
    deadline = time.monotonic() + timeout_s
    polls = 0  # reads in a row that found a turn due: the ramp's step
    idle_wakeups = 0  # wakeups in a row after which nothing was queued for it
    armed: tuple[int, int] | None = None  # (heard, pid) when the hub was told
    while True:
        heard, pid = ear.now() if ear is not None else (0, None)
        listening = pid is not None and armed == (heard, pid)
        if pid is not None and not listening:
            # Told again after anything heard: a wakeup clears the hub's flag.
            listening = yield Arm(pid)
            armed = (heard, pid) if listening else None
        progress: Progress = yield Look()
        span.looked(progress.status.status, progress.queued_messages, listening)
        if progress.status.ended:
            return progress.status
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise timed_out(progress.status, timeout_s)
        if listening and progress.queued_messages == 0:
            polls = 0
            if (yield Pause(min(IDLE_CHECK_S, remaining), heard)):
                span.woken()
                idle_wakeups += 1
                if idle_wakeups > 1:  # the last one was another instance's
                    rest = deadline - time.monotonic()
                    yield Pause(max(0.0, min(WAIT_POLLING.pause_s(idle_wakeups - 1), rest)))
        else:
            polls += 1
            idle_wakeups = 0
            # A listener that (re)connects ends the pause: the wait listens at once.
            news = heard if ear is not None and ear.connecting() else None
            yield Pause(min(WAIT_POLLING.pause_s(polls), remaining), news)


def _armed(ear: Ear, error: TaskHubError) -> bool:
    """A refused "waiting" makes the client's waits poll; a passing failure,
    this read's only."""
    if not error.retryable:
        ear.refused(error)
    return False


def wait_blocking(
    plan: WaitPlan,
    ear: Ear | None,
    arm: Callable[[int], None],
    look: Callable[[], Progress],
) -> InstanceStatus:
    """Run the wait on this thread."""

    def perform(step: WaitStep) -> object:
        if isinstance(step, Look):
            return look()
        if isinstance(step, Arm):
            assert ear is not None
            try:
                arm(step.pid)
            except TaskHubError as error:
                return _armed(ear, error)
            return True
        if step.heard is not None and ear is not None:
            return ear.wait(step.heard, step.seconds)
        time.sleep(step.seconds)
        return False

    try:
        step = next(plan)
        while True:
            step = plan.send(perform(step))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def wait_async(
    plan: WaitPlan,
    ear: Ear | None,
    arm: Callable[[int], Awaitable[None]],
    look: Callable[[], Awaitable[Progress]],
) -> InstanceStatus:
    """Run the wait on the caller's event loop."""

    async def perform(step: WaitStep) -> object:
        if isinstance(step, Look):
            return await look()
        if isinstance(step, Arm):
            assert ear is not None
            try:
                await arm(step.pid)
            except TaskHubError as error:
                return _armed(ear, error)
            return True
        if step.heard is not None and ear is not None:
            return await ear.wait_async(step.heard, step.seconds)
        await asyncio.sleep(step.seconds)
        return False

    try:
        step = next(plan)
        while True:
            step = plan.send(await perform(step))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
