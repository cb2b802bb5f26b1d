"""Each provider operation is written once, as a plan: a generator that yields
the steps it needs and receives their rows back. A step is a procedure call
(`Call`) or a read of a view or table (`Read`, provider/client/reads.py).
`TaskHub` runs a plan on a blocking pool, `AsyncTaskHub` on an asyncio pool,
`OnConnection` on a connection its caller holds; none knows what the
operation does, and the operation does not know which runs it.

    def get_parent_id(self, instance_id: str) -> Plan[str | None]:
        parent = yield from self._scalar("get_parent_id", p_instance_id=instance_id)
        return None if parent is None else str(parent)

A step that fails is raised in the plan, at its `yield`, as the TaskHubError
the runner made of it: a plan may turn a refusal it knows into its own
error (provider/client/operator_actions.py); whatever it lets through ends
the operation.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from functools import wraps
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg

from provider.client.reads import Read
from provider.config import TaskHubConfig

Rows = list[dict[str, Any]]
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class Call:
    """One procedure call: SELECT * FROM <schema>.<function>(p_x => %(p_x)s, ...).

    timeout_s bounds the wait for a pooled connection (None: the pool's)."""

    function: str
    args: dict[str, Any]
    timeout_s: float | None = None


Step = Call | Read
Plan = Generator[Step, Rows, T]


class Plans:
    """Base of the operation classes: the configuration and the two ways to call."""

    def __init__(self, config: TaskHubConfig) -> None:
        self.config = config

    def _call(self, function: str, *, timeout_s: float | None = None, **args: Any) -> Plan[Rows]:
        """The rows of one procedure call, every row by column name."""
        rows = yield Call(function, args, timeout_s)
        return rows

    def _scalar(self, function: str, *, timeout_s: float | None = None, **args: Any) -> Plan[Any]:
        """The value a procedure returns (a function of one result)."""
        rows = yield from self._call(function, timeout_s=timeout_s, **args)
        return next(iter(rows[0].values())) if rows else None

    def _read(self, read: Read) -> Plan[Rows]:
        """The rows of one read, every row by column name."""
        rows = yield read
        return rows


class Runner:
    """What a face needs to run plans: its plans, and a way to run one."""

    plans: Any


class SyncRunner(Runner):
    def run(self, plan: Plan[T], conn: psycopg.Connection[Any] | None = None) -> T:
        raise NotImplementedError


class AsyncRunner(Runner):
    async def run(self, plan: Plan[T], conn: psycopg.AsyncConnection[Any] | None = None) -> T:
        raise NotImplementedError


def blocking(
    operation: Callable[Concatenate[Any, P], Plan[T]],
) -> Callable[Concatenate[SyncRunner, P], T]:
    """The method of the blocking face that runs `operation`."""

    @wraps(operation)
    def method(self: SyncRunner, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.run(operation(self.plans, *args, **kwargs))

    return method


def awaitable(
    operation: Callable[Concatenate[Any, P], Plan[T]],
) -> Callable[Concatenate[AsyncRunner, P], Coroutine[Any, Any, T]]:
    """The method of the asyncio face that runs `operation` (a coroutine of its result)."""

    @wraps(operation)
    async def method(self: AsyncRunner, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.run(operation(self.plans, *args, **kwargs))

    return method
