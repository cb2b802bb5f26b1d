"""Defect flavours of the drill: what it must catch, to show it can fail.

* `permanent-failover-errors`: the provider before issue 38, which took a
  read-only transaction (25006) and a server shutting down, crashed or
  starting (57P01, 57P02, 57P03) for permanent errors. Put back in the
  drill's own process (the application's starts) and in our worker's.
* `single-host-worker`: our worker on a single-host URL (the first primary)
  instead of the multi-host one: after the failover it never reaches the
  primary again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from provider import errors

PERMANENT_FAILOVER_ERRORS = "permanent-failover-errors"
SINGLE_HOST_WORKER = "single-host-worker"
ALL = (PERMANENT_FAILOVER_ERRORS, SINGLE_HOST_WORKER)
ENVIRONMENT = "FAILOVER_DEFECT"  # how a worker process started meanwhile is told
FAILOVER_STATES = frozenset({"25006", "57P01", "57P02", "57P03"})
Retryable = Callable[[str | None], bool]


@contextmanager
def applied(defect: str | None) -> Iterator[None]:
    """The defect in this process and in the workers started meanwhile; undone after."""
    original = errors.is_retryable_sqlstate
    if defect is not None:
        os.environ[ENVIRONMENT] = defect
    _patch(defect)
    try:
        yield
    finally:
        os.environ.pop(ENVIRONMENT, None)
        _set(original)


def apply_from_environment() -> None:
    """In a worker process: the defect the drill named, if any."""
    _patch(os.environ.get(ENVIRONMENT))


def _patch(defect: str | None) -> None:
    if defect == PERMANENT_FAILOVER_ERRORS:
        _set(_without_failover_states(errors.is_retryable_sqlstate))


def _set(retryable: Retryable) -> None:
    # translate() looks the function up in its module at every call.
    setattr(errors, "is_retryable_sqlstate", retryable)  # noqa: B010


def _without_failover_states(retryable: Retryable) -> Retryable:
    def patched(sqlstate: str | None) -> bool:
        return sqlstate not in FAILOVER_STATES and retryable(sqlstate)

    return patched
