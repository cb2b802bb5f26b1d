"""Errors raised by the provider, split by what the caller should do next.

* `RetryableError`: transient (connection lost, deadlock, statement timeout,
  server restarting, disk full, a failover under way, a pooler's prepared
  statement clash). Retry the same call later.
* `PermanentError`: retrying the same call cannot succeed (bad input, a
  duplicate event, a schema that is missing a function). `InvalidInput` is
  the bad input found before any SQL runs; `ConfigurationError` a hub that
  cannot be opened as configured (bad URL, unknown host, nobody listening,
  refused credentials, missing database).
* `LockLost`: a permanent error meaning the lease behind a lock token is gone
  (expired, taken over, acked, or the item was cancelled). Stop the work; do
  not ack it.
"""

from __future__ import annotations

from typing import Self

import psycopg
import psycopg_pool

from provider.masking import mask_url

# SQLSTATE raised by the task-hub procedures when a lock token holds no live lease.
LEASE_LOST_SQLSTATE = "TH001"

# Classes of SQLSTATE that describe a passing condition, not the request.
_RETRYABLE_CLASSES = ("08", "53", "57", "58")  # connection, resources, operator, system
_RETRYABLE_STATES = {
    "40001",  # serialization_failure
    "40P01",  # deadlock_detected
    "55P03",  # lock_not_available
    "0A000",  # cached plan must not change result type (a migration replaced a function)
    # A connection that no longer reaches a writable primary: one left on a
    # demoted primary, or a standby reached through a URL without
    # target_session_attrs=read-write. A new connection finds the primary.
    "25006",  # read_only_sql_transaction
    # A prepared statement another client of a transaction pooler made or
    # dropped (provider/client/pooling.py says how to avoid them): the next
    # call, on another server connection, can succeed.
    "26000",  # invalid_sql_statement_name: prepared statement does not exist
    "42P05",  # duplicate_prepared_statement
}

# SQLSTATEs after which the connection itself is not worth keeping: the pool
# closes it rather than hand it out again (the 08 and 57P0x classes already
# leave the connection broken).
REPLACE_CONNECTION_STATES = frozenset({"25006"})


class TaskHubError(Exception):
    """Base class of every error the provider raises."""

    retryable: bool = False

    def __init__(self, operation: str, message: str, sqlstate: str | None = None) -> None:
        # Whatever got into the message, a URL's user and password are not shown.
        message = mask_url(message)
        super().__init__(f"{operation}: {message}")
        self.operation = operation
        self.message = message
        self.sqlstate = sqlstate

    def renamed(self, operation: str) -> Self:
        """The same error, naming `operation`: the public call that made the
        internal one that failed."""
        clone = type(self).__new__(type(self))
        clone.__dict__.update(vars(self))
        TaskHubError.__init__(clone, operation, self.message, self.sqlstate)
        return clone


class RetryableError(TaskHubError):
    retryable = True


class PermanentError(TaskHubError):
    retryable = False


class InvalidInput(PermanentError, ValueError):
    """Bad input, caught in Python before any SQL runs or refused by the hub
    (SQLSTATE 22023, for the application client: a rule the hub keeps
    itself, as a label's form): a ValueError."""

    def __init__(self, operation: str, message: str) -> None:
        super().__init__(operation, message, "22023")


class ConfigurationError(PermanentError):
    """The hub cannot be opened as configured: retrying the same settings
    cannot succeed, so a worker must not retry it as a passing failure."""


class LockLost(PermanentError):
    """The lease behind this lock token is no longer held."""


def is_retryable_sqlstate(sqlstate: str | None) -> bool:
    if sqlstate is None:
        return False
    return sqlstate in _RETRYABLE_STATES or sqlstate.startswith(_RETRYABLE_CLASSES)


def translate(operation: str, error: Exception) -> TaskHubError:
    """Map a psycopg / pool exception to LockLost, RetryableError or PermanentError."""
    if isinstance(error, psycopg_pool.PoolTimeout):
        return RetryableError(operation, f"no database connection available: {error}")
    if isinstance(error, psycopg.Error):
        sqlstate = error.sqlstate
        message = error.diag.message_primary or str(error).strip()
        if sqlstate == LEASE_LOST_SQLSTATE:
            detail = error.diag.message_detail
            return LockLost(operation, f"{message} ({detail})" if detail else message, sqlstate)
        # A connection that broke has no SQLSTATE; so does a closed connection.
        if is_retryable_sqlstate(sqlstate) or (
            sqlstate is None
            and isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
        ):
            return RetryableError(operation, message, sqlstate)
        return PermanentError(operation, message, sqlstate)
    return PermanentError(operation, str(error))


# -- what the application client refuses (provider/client/app_client.py) -----


class InstanceNotFound(PermanentError):
    """No instance with this id: none exists and no start of it is queued
    (SQLSTATE P0002, as `taskhub-pg cancel` exits 3)."""


class InstanceEnded(PermanentError):
    """The instance has ended (Completed, Failed or ContinuedAsNew): a cancel
    or an event would change nothing (SQLSTATE 55000, as the CLI exits 1)."""


class InstanceRunning(PermanentError):
    """A restart of an instance that has not ended (Pending or Running): it
    would run twice. Cancel it first, or restart it once it has ended
    (SQLSTATE 55006, as `taskhub-pg restart` exits 1)."""


class ScheduleNotFound(PermanentError):
    """No schedule of this name (SQLSTATE P0002 from a schedule's call)."""


class DeadLetterNotFound(PermanentError):
    """No dead letter with this id (SQLSTATE P0002 from a requeue, as
    `taskhub-pg requeue` exits 3)."""


class NoLeaseHeld(PermanentError):
    """The instance holds no lease of the kind to release (as `taskhub-pg
    release-lease` exits 3)."""


class StartConflict(PermanentError):
    """A start repeated an instance id that exists with another orchestration,
    input or version: nothing was written (SQLSTATE 23505)."""


class InstanceFailed(PermanentError):
    """get_output of an instance that failed: `error` is what it failed with."""

    def __init__(self, operation: str, instance_id: str, error: str | None) -> None:
        super().__init__(operation, f"instance {instance_id} failed: {error}")
        self.instance_id = instance_id
        self.error = error


class InstanceNotEnded(RetryableError):
    """get_output of an instance still pending or running: ask again later
    (or wait_for_completion)."""


class WaitTimeout(RetryableError, TimeoutError):
    """wait_for_completion gave up: the instance had not ended in time."""


# What the hub's refusals mean to the application client, by SQLSTATE.
REFUSALS: dict[str, type[PermanentError]] = {
    "P0002": InstanceNotFound,
    "55000": InstanceEnded,
    "55006": InstanceRunning,
    "23505": StartConflict,
}


def refined(error: TaskHubError) -> TaskHubError:
    """A hub's refusal as its own class (InstanceNotFound, InstanceEnded,
    StartConflict, ScheduleNotFound, InvalidInput for bad input the hub
    checks itself: a label's form); any other error as it is."""
    if error.sqlstate == "22023" and type(error) is PermanentError:
        return InvalidInput(error.operation, error.message)
    kind = REFUSALS.get(error.sqlstate or "")
    if kind is None or type(error) is not PermanentError:
        return error
    if kind is InstanceNotFound and error.operation.endswith("_schedule"):
        kind = ScheduleNotFound
    return kind(error.operation, error.message, error.sqlstate)
