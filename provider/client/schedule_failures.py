"""What a scheduler does when a schedule fails (scheduler.py): count it in
its stats, log it, and, when the hub has not counted it already, count it
against the schedule, which the hub pauses after
schedule_pause_after_failures in a row (taskhub_count_schedule_failure)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from provider.errors import TaskHubError
from provider.logs import fields
from provider.types import TickOutcome

log = logging.getLogger("provider.scheduler")


@dataclass
class SchedulerStats:
    """What one scheduler did since it was made (counts only grow)."""

    passes: int = 0  # passes that read the schedules
    started: int = 0  # ticks started
    skipped: int = 0  # late ticks skipped (missed="skip")
    failed: int = 0  # fires and tick reckonings that failed, whatever the cause
    paused: int = 0  # schedules the hub paused after a failure of this scheduler's


class CountsFailures(Protocol):
    def count_schedule_failure(self, name: str, error: str) -> bool: ...


class FailureReport:
    def __init__(self, client: CountsFailures, stats: SchedulerStats) -> None:
        self._client = client
        self.stats = stats

    def refused(self, name: str, outcome: TickOutcome) -> None:
        """The hub refused the start, and counted it against the schedule."""
        self.stats.failed += 1
        log.warning(
            "schedule %s: start refused: %s",
            name,
            outcome.failure,
            extra=fields("schedule.failed", schedule=name, paused=outcome.paused),
        )
        if outcome.paused:
            self._was_paused(name)

    def call_failed(self, name: str, tick: datetime, error: TaskHubError) -> None:
        """The call failed (the server, the connection, a migration): the
        schedule is not to blame, and the tick is tried at the next pass."""
        self.stats.failed += 1
        log.warning(
            "schedule %s: tick %s not fired, tried again at the next pass: %s",
            name,
            tick.isoformat(),
            error,
            extra=fields("schedule.failed", schedule=name, sqlstate=error.sqlstate),
        )

    def count_against(self, name: str, reason: str) -> None:
        """A failure the hub did not see (this process could not work out the
        schedule's ticks): counted against the schedule here."""
        self.stats.failed += 1
        log.warning("schedule %s: %s", name, reason, extra=fields("schedule.failed", schedule=name))
        # What the hub stores: UTF-8 text without NUL.
        text = reason.replace("\x00", "\\0").encode("utf-8", "replace").decode("utf-8")
        try:
            paused = self._client.count_schedule_failure(name, text)
        except TaskHubError as error:
            log.warning(
                "schedule %s: its failure could not be counted: %s",
                name,
                error,
                extra=fields("schedule.failed", schedule=name, sqlstate=error.sqlstate),
            )
            return
        if paused:
            self._was_paused(name)

    def _was_paused(self, name: str) -> None:
        self.stats.paused += 1
        log.error(
            "schedule %s: paused after failing schedule_pause_after_failures times in a row"
            " (taskhub-pg schedule list says why; resume it once mended)",
            name,
            extra=fields("schedule.paused", schedule=name),
        )
