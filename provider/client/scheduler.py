"""The scheduler: starts each due tick of every schedule exactly once, however
many schedulers run (in each worker process, or `taskhub-pg scheduler`).

Every `poll_s` it reads the schedules and, for each one not paused, takes its
due ticks in order through taskhub_fire_schedule: the schedule's row lock and
its latest tick make racing schedulers take turns, and a tick is started by
whoever takes it first, with the instance id 'schedule:<name>:<tick>'.

Missed ticks (the schedulers were down, or the clock jumped ahead): a tick
due more than `grace_s` ago is late. A schedule with missed="skip" starts no
late tick; one with missed="once" starts the latest late tick, once. Either
way the earlier late ticks are never started. A clock that jumps back starts
nothing until it passes the latest tick again.

One schedule cannot stop the others: each is fired on its own, and whatever
goes wrong with it is caught, logged and counted (`stats`), and the pass
goes on with the next. A start the hub refuses is counted against the
schedule by the hub itself (taskhub_fire_schedule_outcome); ticks this
process cannot work out (a cron expression or time zone it cannot read) are
counted here (taskhub_count_schedule_failure). After
schedule_pause_after_failures in a row (taskhub_settings, 5) the hub pauses
the schedule, with the reason in `taskhub-pg schedule list`. A passing
failure (RetryableError: a timeout, a lost connection) counts against no
schedule: the tick is tried again at the next pass.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from provider.backoff import Backoff
from provider.client.schedule_failures import FailureReport, SchedulerStats
from provider.client.schedule_ticks import Ticks, cron_parser_installed
from provider.errors import InvalidInput, TaskHubError
from provider.logs import fields
from provider.types import Schedule

if TYPE_CHECKING:
    from provider.client.app_client import Client

log = logging.getLogger("provider.scheduler")

# At most this many ticks of one schedule are started in one pass (a second's
# interval with a minute's grace: 60).
MAX_TICKS_PER_PASS = 1_000
ERROR_BACKOFF = Backoff(first_s=0.5, cap_s=30.0)
Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Fired:
    """A tick this scheduler took: started, or skipped as late."""

    schedule: str
    tick: datetime
    started: bool

    @property
    def instance_id(self) -> str:
        return f"schedule:{self.schedule}:{self.tick.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


class Scheduler:
    """Starts due ticks on `client`'s hub; run_once() for one pass, start()
    and stop() for a thread of its own."""

    def __init__(
        self,
        client: Client,
        *,
        poll_s: float = 0.5,
        grace_s: float = 60.0,
        clock: Clock = system_clock,
    ) -> None:
        if not 0 < poll_s <= 3_600:
            raise InvalidInput("Scheduler", "poll_s must be between 0 and 3600 seconds")
        if not poll_s <= grace_s <= 86_400:
            raise InvalidInput("Scheduler", "grace_s must be between poll_s and a day")
        self._client = client
        self.poll_s = poll_s
        self.grace = timedelta(seconds=grace_s)
        self._clock = clock
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.stats = SchedulerStats()
        self._failures = FailureReport(client, self.stats)
        # Without the schedules extra, cron schedules are the other
        # schedulers' to fire: not this one's failures, nor theirs.
        self._can_read_cron = cron_parser_installed()
        self._left_to_the_others: set[str] = set()

    def run_once(self) -> list[Fired]:
        """One pass over every schedule: the ticks this scheduler took. Only
        reading the schedules can fail the pass; a schedule that fails is
        counted, logged and passed over."""
        now = self._clock()
        fired: list[Fired] = []
        schedules = self._client.list_schedules()
        self.stats.passes += 1
        for schedule in schedules:
            if schedule.paused:
                continue
            if schedule.cron is not None and not self._can_read_cron:
                self._leave_to_the_others(schedule.name)
                continue
            try:
                fired += self._fire_due(schedule, now)
            except Exception:  # a defect of this process: still, the others fire
                self.stats.failed += 1
                log.exception(
                    "schedule %s: firing failed",
                    schedule.name,
                    extra=fields("schedule.failed", schedule=schedule.name),
                )
        return fired

    def _leave_to_the_others(self, name: str) -> None:
        if name not in self._left_to_the_others:
            self._left_to_the_others.add(name)
            log.error(
                "schedule %s: this scheduler cannot read cron expressions"
                " (pip install 'taskhub-pg[schedules]'): left to the other schedulers",
                name,
                extra=fields("schedule.no_cron_parser", schedule=name),
            )

    def _fire_due(self, schedule: Schedule, now: datetime) -> list[Fired]:
        """Take the due ticks of one schedule, in order; the first that fails
        ends its turn (the tick stays due, to be tried at the next pass)."""
        try:
            due = self._due(schedule, now)
        except Exception as error:  # its cron expression, its time zone: the schedule's own
            self._failures.count_against(
                schedule.name, f"its ticks cannot be worked out: {error!r}"
            )
            return []
        fired = []
        for tick, start in due:
            try:
                outcome = self._client.fire_schedule_outcome(schedule.name, tick, start)
            except TaskHubError as error:
                self._failures.call_failed(schedule.name, tick, error)
                break
            if outcome.failure is not None:
                self._failures.refused(schedule.name, outcome)
                break
            if outcome.taken:
                fired.append(Fired(schedule.name, tick, start))
                if start:
                    self.stats.started += 1
                else:
                    self.stats.skipped += 1
        return fired

    def _due(self, schedule: Schedule, now: datetime) -> list[tuple[datetime, bool]]:
        """The ticks to take now, oldest first, each with whether to start it."""
        ticks = Ticks(schedule.every_s, schedule.cron, schedule.time_zone)
        horizon = now - self.grace
        latest = schedule.ticks_until or schedule.created_at
        due: list[tuple[datetime, bool]] = []
        if latest < horizon:
            late = ticks.latest_at_or_before(horizon)
            if late > latest:
                due.append((late, schedule.missed == "once"))
                latest = late
        due += [(tick, True) for tick in ticks.between(latest, now, MAX_TICKS_PER_PASS)]
        return due

    def start(self) -> None:
        if self._thread is None:
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="taskhub-scheduler", daemon=True)
            self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def __enter__(self) -> Scheduler:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                for taken in self.run_once():
                    log.info(
                        "schedule %s: tick %s %s",
                        taken.schedule,
                        taken.tick.isoformat(),
                        "started" if taken.started else "skipped (late)",
                        extra=fields(
                            "schedule.tick",
                            schedule=taken.schedule,
                            instance_id=taken.instance_id,
                            started=taken.started,
                        ),
                    )
                failures = 0
                pause_s = self.poll_s
            except TaskHubError as error:
                failures += 1
                pause_s = ERROR_BACKOFF.pause_s(failures)
                log.warning(
                    "scheduler pass failed, retrying in %.1f s: %s",
                    pause_s,
                    error,
                    extra=fields("schedule.failed", sqlstate=error.sqlstate),
                )
            self._stopping.wait(pause_s)
