"""The calls the worker layer makes, as Protocols: `TaskHub` provides them,
and unit tests drive the worker and the lease keeper with fakes of them."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from provider.config import TaskHubConfig
from provider.tracing import TraceContext
from provider.types import JsonObject, TagFilter, WorkItemLease


class WorkerCalls(Protocol):
    """What ActivityWorker needs of a task hub."""

    @property
    def config(self) -> TaskHubConfig: ...

    def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None: ...

    def ack_work_item(self, lock_token: str, completion: JsonObject | None = None) -> None: ...

    def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None: ...

    def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int: ...

    def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> int: ...

    def cleanup_orphaned_sessions(self) -> int: ...


class OrchestrationLeaseCalls(Protocol):
    """What keep_orchestration_lease needs of a task hub."""

    @property
    def config(self) -> TaskHubConfig: ...

    def renew_orchestration_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int: ...


class AsyncWorkerCalls(Protocol):
    """What AsyncActivityWorker needs of a task hub (AsyncTaskHub provides it)."""

    @property
    def config(self) -> TaskHubConfig: ...

    async def fetch_work_item(
        self,
        lock_timeout_ms: int | None = None,
        *,
        owner_id: str | None = None,
        session_lock_timeout_ms: int | None = None,
        tags: TagFilter | None = None,
        caller_now_ms: int | None = None,
    ) -> WorkItemLease | None: ...

    async def ack_work_item(
        self, lock_token: str, completion: JsonObject | None = None
    ) -> None: ...

    async def abandon_work_item(
        self, lock_token: str, *, delay_ms: int | None = None, ignore_attempt: bool = False
    ) -> None: ...

    async def renew_work_item_lock(
        self, lock_token: str, extend_ms: int, *, timeout_s: float | None = None
    ) -> int: ...

    async def renew_session_lock(
        self, owner_ids: Sequence[str], extend_ms: int, idle_timeout_ms: int
    ) -> int: ...

    async def cleanup_orphaned_sessions(self) -> int: ...


@runtime_checkable
class TraceContextSource(Protocol):
    """A hub that keeps its instances' trace contexts (TaskHub); fakes
    without it run every activity in a trace of its own."""

    def trace_context(self, instance_id: str) -> TraceContext | None: ...


@runtime_checkable
class AsyncTraceContextSource(Protocol):
    """The same for AsyncTaskHub."""

    async def trace_context(self, instance_id: str) -> TraceContext | None: ...


class WakeupSubscriber(Protocol):
    """What a listener tells of its connection (provider/worker/slots.py's SlotBoard)."""

    def listening(self, pid: int) -> None: ...

    def notified(self) -> None: ...

    def lost(self) -> None: ...

    def wake_all(self) -> None: ...


class WakeupListener(Protocol):
    """The process's listening connection for a hub's schema (TaskHub.wakeups())."""

    def subscribe(self, subscriber: WakeupSubscriber) -> None: ...

    def release(self) -> None: ...


@runtime_checkable
class WakeupSource(Protocol):
    """A hub that can wake its workers (TaskHub); fakes without it poll."""

    def wakeups(self, queue: str = "worker") -> WakeupListener: ...

    def set_wakeup_waiting(self, pid: int, waiting: bool) -> None: ...


@runtime_checkable
class AsyncWakeupSource(Protocol):
    """A hub that can wake its asyncio workers (AsyncTaskHub)."""

    def wakeups(self, queue: str = "worker") -> WakeupListener: ...

    async def set_wakeup_waiting(self, pid: int, waiting: bool) -> None: ...


# The calls both workers make, each a plain method of TaskHub and a coroutine
# function of AsyncTaskHub.
WORKER_CALL_NAMES = (
    "fetch_work_item",
    "ack_work_item",
    "abandon_work_item",
    "renew_work_item_lock",
    "renew_session_lock",
    "cleanup_orphaned_sessions",
)


def check_hub(worker: str, hub: object, *, asyncio_calls: bool) -> None:
    """Refuse a hub of the other face when the worker is made: its calls
    would fail in every slot of the running loop instead (TypeErrors)."""
    wanted = "an AsyncTaskHub" if asyncio_calls else "a TaskHub"
    other = "ActivityWorker" if asyncio_calls else "AsyncActivityWorker"
    got = type(hub).__name__
    if not hasattr(hub, "config"):
        raise TypeError(f"{worker} needs {wanted}, got {got} (it has no config)")
    for name in WORKER_CALL_NAMES:
        call = getattr(hub, name, None)
        if not callable(call):
            raise TypeError(f"{worker} needs {wanted}, got {got} (it has no {name})")
        if inspect.iscoroutinefunction(call) != asyncio_calls:
            raise TypeError(
                f"{worker} needs {wanted}, got {got}, whose calls are "
                f"{'blocking' if asyncio_calls else 'coroutines'}: pass {wanted}, "
                f"or serve this hub with {other}"
            )
