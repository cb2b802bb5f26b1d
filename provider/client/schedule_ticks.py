"""When a schedule's occurrences ("ticks") fall: pure time arithmetic, no SQL.

An interval schedule ticks at whole multiples of its interval since the Unix
epoch, so that every scheduler, whenever it started, names the same ticks. A
cron schedule ticks where its expression matches, read in its time zone
(cronsim, the `schedules` extra), to the minute.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from provider.errors import InvalidInput

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _cronsim() -> type:
    try:
        from cronsim import CronSim
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise InvalidInput(
            "schedule",
            "cron schedules need the schedules extra: pip install 'taskhub-pg[schedules]'",
        ) from None
    return CronSim


def cron_parser_installed() -> bool:
    """Whether this process can read cron expressions (the schedules extra):
    a scheduler without it leaves cron schedules to the others, and counts
    no failure against them."""
    try:
        _cronsim()
    except InvalidInput:
        return False
    return True


def zone_info(operation: str, name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(operation, f"unknown time zone {name!r}") from None


def check_cron(operation: str, expression: str) -> None:
    """Refuse an expression the scheduler could not read, before it is stored."""
    cron_sim = _cronsim()
    try:
        next(iter(cron_sim(expression, datetime.now(UTC))))
    except Exception as error:  # cronsim raises its own CronSimError, or StopIteration
        raise InvalidInput(operation, f"cron expression {expression!r}: {error}") from None


@dataclass(frozen=True)
class Ticks:
    """The ticks of one schedule: `every_s` seconds, or `cron` in `zone`."""

    every_s: int | None
    cron: str | None
    zone: str = "UTC"

    def after(self, start: datetime) -> Iterator[datetime]:
        """Every tick strictly after `start`, in order (in UTC)."""
        if self.every_s is not None:
            step = timedelta(seconds=self.every_s)
            tick = self.latest_at_or_before(start) + step
            while True:
                yield tick
                tick += step
        else:
            assert self.cron is not None
            local = start.astimezone(ZoneInfo(self.zone))
            for tick in _cronsim()(self.cron, local):
                yield tick.astimezone(UTC)

    def latest_at_or_before(self, moment: datetime) -> datetime:
        """The last tick at or before `moment` (in UTC)."""
        if self.every_s is not None:
            seconds = int((moment - EPOCH).total_seconds() // self.every_s) * self.every_s
            return EPOCH + timedelta(seconds=seconds)
        assert self.cron is not None
        # cronsim's reverse walk starts strictly before its moment.
        local = (moment + timedelta(microseconds=1)).astimezone(ZoneInfo(self.zone))
        latest: datetime = next(iter(_cronsim()(self.cron, local, reverse=True)))
        return latest.astimezone(UTC)

    def between(self, start: datetime, end: datetime, limit: int) -> list[datetime]:
        """The ticks in (start, end], oldest first, at most `limit` of the latest."""
        ticks: list[datetime] = []
        for tick in self.after(start):
            if tick > end:
                break
            ticks.append(tick)
            if len(ticks) > limit:
                del ticks[0]
        return ticks
