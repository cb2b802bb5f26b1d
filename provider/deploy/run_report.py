"""What a migration run did: the revisions it applied, how long it took, the
lock waits it met and its retries. provider/deploy/runner.py fills it in and logs it;
`taskhub-pg upgrade` and `downgrade` print it (`--json` for pipelines)."""

from __future__ import annotations

import logging
import logging.config
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("taskhub_pg.migrate")


def configure_logging(config_file: str | None, command_line: bool) -> None:
    """Logging for a run that Alembic's own configuration drives: alembic.ini's
    loggers (the lock waits and each run's summary among them) where the file
    is there; for the alembic command line without one (the migrations named
    in pyproject.toml's [tool.alembic]), the same on stderr. Called from
    Python with neither, the caller's logging stands."""
    if config_file and Path(config_file).is_file():
        logging.config.fileConfig(config_file, disable_existing_loggers=False)
    elif command_line:
        logging.basicConfig(format="%(levelname)-5.5s [%(name)s] %(message)s")
        for name in ("alembic", "taskhub_pg"):
            logging.getLogger(name).setLevel(logging.INFO)


def _lock_name(table: str) -> str:
    """A table's name as a wait names it; the call gate names itself."""
    return table if table.startswith("the ") or table.startswith("(") else f"table {table}"


@dataclass
class LockWait:
    """One failed attempt: the table whose lock was not granted in time."""

    attempt: int
    table: str
    waited_ms: float
    holders: list[str]
    retry_in_s: float | None  # None: no attempt was left

    def describe(self) -> str:
        held = "; ".join(self.holders) or "nobody by the time we looked"
        then = (
            f"retrying in {self.retry_in_s:.2f} s"
            if self.retry_in_s is not None
            else "no attempt left"
        )
        return (
            f"attempt {self.attempt}: {_lock_name(self.table)} not locked within"
            f" {self.waited_ms:.0f} ms, held by {held}; rolled back, {then}"
        )


@dataclass
class MigrationRun:
    schema: str
    steps: list[str] = field(default_factory=list)  # "0005 -> 0006", "0006 -> 0005"
    locked_tables: list[str] = field(default_factory=list)
    attempts: int = 0
    lock_waits: list[LockWait] = field(default_factory=list)
    duration_s: float = 0.0
    # The longest a revision of the run held the call gate (and its tables),
    # up to its commit: how long a call of the hub could have waited on it.
    locks_held_ms: float | None = None
    from_revision: str | None = None
    to_revision: str | None = None
    # time.time() when the first revision was done: an upgrade commits it at
    # once, so from then on the hub runs what that revision left.
    first_revision_done_at: float | None = None

    @property
    def retries(self) -> int:
        return max(0, self.attempts - 1)

    def as_json(self) -> dict[str, Any]:
        found = asdict(self)
        found["retries"] = self.retries
        return found

    def summary(self) -> str:
        if not self.steps:
            return f"schema {self.schema}: at {self.to_revision or 'base'}, nothing to apply"
        tables = ", ".join(self.locked_tables) or "none"
        locks = (
            f"; calls held at most {self.locks_held_ms:.0f} ms, tables locked: {tables}"
            if self.locks_held_ms is not None
            else ""
        )
        # The revisions are counted, not listed (--json lists them).
        return (
            f"schema {self.schema}: {self.from_revision or 'base'} -> {self.to_revision or 'base'}"
            f" ({_count(len(self.steps), 'revision')}) in {self.duration_s * 1000:.0f} ms,"
            f" {_count(self.attempts, 'attempt')}, {_count(len(self.lock_waits), 'lock wait')}"
            f"{locks}"
        )

    def failure(self, first_timeout_ms: int, last_timeout_ms: int) -> str:
        last = self.lock_waits[-1]
        held = "; ".join(last.holders) or "sessions that were gone when we looked"
        done = (
            f"stopped at {self.to_revision or 'base'} after {', '.join(self.steps)}"
            " (each revision commits on its own: run it again to go on)"
            if self.steps
            else "nothing changed"
        )
        return (
            f"schema {self.schema}: {done}: {_lock_name(last.table)} could not be locked"
            f" within {_waits(first_timeout_ms, last_timeout_ms)} in {self.attempts} attempts over"
            f" {self.duration_s:.1f} s; held by {held}"
        )


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


def _waits(first_ms: int, last_ms: int) -> str:
    """How long the attempts waited for a lock: "100 ms", or "100-300 ms"."""
    return f"{first_ms} ms" if first_ms == last_ms else f"{first_ms}-{last_ms} ms"
