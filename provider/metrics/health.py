"""HubHealth: whether the last read of each schema worked, why not, since when.

The metrics server answers /healthz from it (up or down, and since when),
and it logs each change of state once (WARNING when a schema goes down, with
the reason; INFO when it is back), not every scrape: a database that stays
down is one line, not one a scrape. The reason goes to the log only: libpq's
words name the host, the port and the user, which /healthz does not tell
whoever can reach it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from provider.logs import fields
from provider.masking import masked

log = logging.getLogger("provider.metrics")


@dataclass(frozen=True)
class HubState:
    """What the last read of one schema found, and since when it has found so."""

    schema: str
    up: bool
    since: datetime
    reason: str | None = None  # when down: the error's class and first line

    def as_json(self) -> dict[str, object]:
        """What /healthz shows: up or down, since when; never the reason."""
        return {
            "schema": self.schema,
            "up": self.up,
            "since": self.since.isoformat(timespec="seconds"),
        }


def reason_of(error: BaseException, passwords: Iterable[str] = ()) -> str:
    """The error's class and first line, any password masked: libpq's later
    lines are hints, and the whole of it would not fit a log line."""
    lines = str(error).strip().splitlines()
    reason = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    return masked(reason, passwords)


class HubHealth:
    """The last state of each schema. Scrapes and probes run in the server's
    threads at once: every change happens under a lock."""

    def __init__(self, schemas: Sequence[str], passwords: Iterable[str] = ()) -> None:
        """`passwords`: the forms of the URL's password (masking.passwords_of),
        masked in every reason."""
        self.schemas = list(schemas)
        self._passwords = tuple(passwords)
        self._states: dict[str, HubState] = {}
        self._lock = threading.Lock()

    def record(self, schema: str, error: BaseException | None) -> HubState:
        """What a read of `schema` found (None: it worked); logs a change."""
        now = datetime.now(UTC)
        reason = None if error is None else reason_of(error, self._passwords)
        with self._lock:
            before = self._states.get(schema)
            if before is not None and (before.up, before.reason) == (error is None, reason):
                return before  # no change: nothing to log, `since` stays
            since = now
            if before is not None and not before.up and error is not None:
                since = before.since  # down for another reason now: down since it went down
            state = HubState(schema, error is None, since, reason)
            self._states[schema] = state
        _log_change(before, state, now)
        return state

    def states(self) -> list[HubState]:
        """Each schema's state; one never read yet counts as down."""
        with self._lock:
            known = dict(self._states)
        never = datetime.now(UTC)
        return [
            known.get(schema) or HubState(schema, False, never, "not read yet")
            for schema in self.schemas
        ]

    def healthy(self) -> bool:
        return all(state.up for state in self.states())


def _log_change(before: HubState | None, state: HubState, now: datetime) -> None:
    extra = fields(
        "metrics.hub_up" if state.up else "metrics.hub_down",
        schema=state.schema,
        reason=state.reason,
        since=state.since.isoformat(timespec="seconds"),
    )
    if not state.up:
        log.warning("schema %s cannot be read: %s", state.schema, state.reason, extra=extra)
    elif before is not None:  # the first read that works is no news
        down_for = (now - before.since).total_seconds()
        log.info("schema %s is read again after %.0f s down", state.schema, down_for, extra=extra)
