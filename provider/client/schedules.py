"""Schedules as plans: set, pause, resume, remove, list, and take a tick
(taskhub_fire_schedule). The scheduler (scheduler.py) decides which ticks."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, get_args

from provider.client.arguments import check_text, check_version
from provider.client.plans import Plan, Plans
from provider.client.schedule_ticks import check_cron, zone_info
from provider.errors import InvalidInput, PermanentError
from provider.shapes import json_dumps
from provider.tracing import current_trace_context
from provider.types import MissedPolicy, Schedule

MAX_NAME_BYTES = 200


def _check_name(operation: str, name: Any) -> None:
    check_text(operation, "name", name)
    if ":" in name or len(name.encode()) > MAX_NAME_BYTES:
        raise InvalidInput(
            operation, f"a schedule's name has at most {MAX_NAME_BYTES} bytes and no ':'"
        )


def _aware(operation: str, moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.now(UTC)
    if moment.tzinfo is None:
        raise InvalidInput(operation, "now must carry a time zone")
    return moment


class SchedulePlans(Plans):
    def set_schedule(
        self,
        name: str,
        orchestration: str,
        input: Any = None,
        *,
        cron: str | None = None,
        every_s: int | None = None,
        version: str | None = None,
        time_zone: str = "UTC",
        missed: MissedPolicy = "skip",
        now: datetime | None = None,
    ) -> Plan[bool]:
        """Create or change a schedule (True: created). Its ticks start after
        `now` (default: this machine's clock)."""
        operation = "set_schedule"
        _check_name(operation, name)
        check_text(operation, "orchestration", orchestration)
        check_version(operation, version)
        if (cron is None) == (every_s is None):
            raise InvalidInput(operation, "give either cron or every_s")
        if every_s is not None and (
            isinstance(every_s, bool) or not isinstance(every_s, int) or every_s < 1
        ):
            raise InvalidInput(operation, "every_s must be a whole number of seconds, at least 1")
        if missed not in get_args(MissedPolicy):
            raise InvalidInput(operation, f"missed must be one of {get_args(MissedPolicy)}")
        zone_info(operation, time_zone)
        if cron is not None:
            check_cron(operation, cron)
        created = yield from self._scalar(
            "taskhub_set_schedule",
            p_name=name,
            p_orchestration=orchestration,
            p_input=json_dumps(operation, "input", input),
            p_version=version,
            p_cron=cron,
            p_every_ms=None if every_s is None else every_s * 1000,
            p_time_zone=time_zone,
            p_missed=missed,
            p_now=_aware(operation, now),
        )
        return bool(created)

    def pause_schedule(self, name: str, *, now: datetime | None = None) -> Plan[bool]:
        """Pause it: no tick starts until it is resumed. Whether it was paused already."""
        _check_name("pause_schedule", name)
        was = yield from self._scalar(
            "taskhub_pause_schedule",
            p_name=name,
            p_paused=True,
            p_now=_aware("pause_schedule", now),
        )
        return bool(was)

    def resume_schedule(self, name: str, *, now: datetime | None = None) -> Plan[bool]:
        """Resume it from `now` on: ticks that fell while it was paused never
        start. Whether it was paused."""
        _check_name("resume_schedule", name)
        was = yield from self._scalar(
            "taskhub_pause_schedule",
            p_name=name,
            p_paused=False,
            p_now=_aware("resume_schedule", now),
        )
        return bool(was)

    def remove_schedule(self, name: str) -> Plan[None]:
        """Remove it; the instances it started stay."""
        _check_name("remove_schedule", name)
        yield from self._call("taskhub_remove_schedule", p_name=name)

    def list_schedules(self) -> Plan[list[Schedule]]:
        rows = yield from self._call("taskhub_list_schedules")
        return [_schedule(row) for row in rows]

    def fire_schedule(self, name: str, tick: datetime, start: bool) -> Plan[bool]:
        """Take one tick: start it (or, with start=False, record it as
        skipped). False: another scheduler took it, or it is not due."""
        context = current_trace_context()
        taken = yield from self._scalar(
            "taskhub_fire_schedule",
            p_name=name,
            p_tick=tick,
            p_start=start,
            p_traceparent=context.traceparent if context else None,
            p_tracestate=context.tracestate if context else None,
        )
        return bool(taken)


def _schedule(row: dict[str, Any]) -> Schedule:
    missed = row["missed"]
    if missed not in get_args(MissedPolicy):
        raise PermanentError("list_schedules", f"unknown missed policy {missed!r}")
    every_ms = row["every_ms"]
    return Schedule(
        name=row["name"],
        orchestration=row["orchestration"],
        version=row["version"],
        input=row["input"],
        cron=row["cron"],
        every_s=None if every_ms is None else int(every_ms) // 1000,
        time_zone=row["time_zone"],
        missed=missed,
        paused=row["paused"],
        last_tick_at=row["last_tick_at"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
