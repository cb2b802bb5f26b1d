"""Schedules as plans: set, pause, resume, remove, list, take a tick
(taskhub_fire_schedule_outcome) and count a failure. The scheduler
(scheduler.py) decides which ticks.

A schedule is held to the start's own limits when it is set (the hub holds
it to them too: sql/head/schedules/taskhub_set_schedule.sql), so that no
schedule stored can fail at every tick for its size.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, cast, get_args

from provider.client.arguments import (
    MAX_ID_BYTES,
    check_text,
    check_version,
    check_work_item_size,
    utf8_size,
)
from provider.client.catalogue import Catalogue
from provider.client.plans import Plan
from provider.client.schedule_ticks import Ticks, check_cron, cron_parser_installed, zone_info
from provider.client.steering import label_texts
from provider.errors import InvalidInput, PermanentError
from provider.hub_rows import ScheduleListing
from provider.shapes import json_dumps, runtime_work_item_text, start_orchestration_item
from provider.tracing import current_trace_context
from provider.types import MissedPolicy, Schedule, TickOutcome

MAX_NAME_BYTES = 200
# A tick in a schedule's instance ids: each has this length, so the start of
# any tick is as large as the start of every other.
_ANY_TICK = "2000-01-01T00:00:00Z"


def _check_name(operation: str, name: Any) -> None:
    check_text(operation, "name", name)
    if ":" in name or len(name.encode()) > MAX_NAME_BYTES:
        raise InvalidInput(
            operation, f"a schedule's name has at most {MAX_NAME_BYTES} bytes and no ':'"
        )


def _check_id_size(operation: str, what: str, text: str) -> None:
    if utf8_size(operation, what, text) > MAX_ID_BYTES:
        raise InvalidInput(operation, f"{what} is longer than {MAX_ID_BYTES} bytes")


def _check_start_size(
    operation: str, name: str, orchestration: str, input: Any, version: str | None, input_text: str
) -> None:
    """Refuse a schedule whose ticks the hub could never start: its input
    alone first (a large one is refused before it is encoded again), then
    the StartOrchestration each tick makes, as the hub measures it."""
    check_work_item_size(operation, "the input", input_text)
    start = start_orchestration_item(f"schedule:{name}:{_ANY_TICK}", orchestration, input, version)
    check_work_item_size(operation, "the input", runtime_work_item_text(start))


def _aware(operation: str, moment: datetime | None) -> datetime:
    if moment is None:
        return datetime.now(UTC)
    if moment.tzinfo is None:
        raise InvalidInput(operation, "now must carry a time zone")
    return moment


class SchedulePlans(Catalogue):
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
        priority: int = 0,
        labels: Mapping[str, str] | None = None,
    ) -> Plan[bool]:
        """Create or change a schedule (True: created). Its ticks start after
        `now` (default: this machine's clock), each with this priority and
        these labels (docs/flow-control.md; a change sets them as given)."""
        operation = "set_schedule"
        _check_name(operation, name)
        check_text(operation, "orchestration", orchestration)
        _check_id_size(operation, "orchestration", orchestration)
        check_version(operation, version)
        if version is not None:
            _check_id_size(operation, "version", version)
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
            check_text(operation, "cron", cron)
            _check_id_size(operation, "cron", cron)
            check_cron(operation, cron)
        input_text = json_dumps(operation, "input", input)
        _check_start_size(operation, name, orchestration, input, version, input_text)
        label_list = label_texts(operation, priority, labels)
        arguments: dict[str, Any] = {}
        if priority or label_list:
            # The hub checks the priority and the labels (taskhub_check_steering).
            arguments = {"p_priority": priority, "p_labels": label_list}
        created = yield from self._scalar(
            # Without steering as 0027 and 0028 take it, so that a client of
            # 0029 sets schedules on them.
            "taskhub_set_steered_schedule" if arguments else "taskhub_set_schedule",
            p_name=name,
            p_orchestration=orchestration,
            p_input=input_text,
            p_version=version,
            p_cron=cron,
            p_every_ms=None if every_s is None else every_s * 1000,
            p_time_zone=time_zone,
            p_missed=missed,
            p_now=_aware(operation, now),
            **arguments,
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
        """Every schedule, by name, with its failures (taskhub_read_schedules,
        revision 0029)."""
        rows = yield from self._call("taskhub_read_schedules")
        return [_schedule(row) for row in rows]

    def schedule_listing(self) -> Plan[ScheduleListing | None]:
        """Every schedule, by name, on a hub of any revision: with its failed
        fires from revision 0029 (taskhub_read_schedules), without them on
        0027 and 0028 (taskhub_list_schedules); None before 0027, which has
        no schedules (the dashboard's page)."""
        for function, counts_failures in (
            ("taskhub_read_schedules", True),
            ("taskhub_list_schedules", False),
        ):
            if (yield from self.has_function(f"{function}()")):
                rows = yield from self._call(function)
                return ScheduleListing([_schedule(row) for row in rows], counts_failures)
        return None

    def fire_schedule(self, name: str, tick: datetime, start: bool) -> Plan[bool]:
        """Take one tick: start it (or, with start=False, record it as
        skipped). False: another scheduler took it, it is not due, or its
        start failed (counted against the schedule: fire_schedule_outcome
        says why)."""
        outcome = yield from self.fire_schedule_outcome(name, tick, start)
        return outcome.taken

    def fire_schedule_outcome(self, name: str, tick: datetime, start: bool) -> Plan[TickOutcome]:
        """Take one tick as fire_schedule does, and say how it went: a start
        the hub refused is undone, counted against the schedule (paused after
        schedule_pause_after_failures in a row) and reported, not raised; a
        passing failure (RetryableError) is raised."""
        context = current_trace_context()
        rows = yield from self._call(
            "taskhub_fire_schedule_outcome",
            p_name=name,
            p_tick=tick,
            p_start=start,
            p_traceparent=context.traceparent if context else None,
            p_tracestate=context.tracestate if context else None,
        )
        row = rows[0]
        return TickOutcome(bool(row["out_taken"]), row["out_failure"], bool(row["out_paused"]))

    def count_schedule_failure(self, name: str, error: str) -> Plan[bool]:
        """Count a failure of the schedule that the hub did not see (its ticks
        could not be worked out): paused after schedule_pause_after_failures
        in a row. Whether it is paused now."""
        _check_name("count_schedule_failure", name)
        check_text("count_schedule_failure", "error", error)
        paused = yield from self._scalar(
            "taskhub_count_schedule_failure", p_name=name, p_error=error[:1000]
        )
        return bool(paused)


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
        last_tick_at=_last_started(row),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        # Revision 0029's columns; a hub before it counts no failures.
        failures=row.get("failures", 0),
        last_error=row.get("last_error"),
        paused_reason=row.get("paused_reason"),
        priority=row.get("priority") or 0,
        labels=dict(label.split("=", 1) for label in row.get("labels") or ()),
        last_instance_id=row.get("last_instance_id"),
        next_tick=_next_tick(row["every_ms"], row["cron"], row["time_zone"], row["last_tick_at"]),
        ticks_until=row["last_tick_at"],
    )


def _last_started(row: dict[str, Any]) -> datetime | None:
    """The latest tick started. A hub before 0029 keeps no such column:
    there, the tick its schedulers go on from, unless that is still the
    moment the schedule was made (no tick yet)."""
    if "last_started_tick" in row:
        return cast("datetime | None", row["last_started_tick"])
    ticks_until = cast(datetime, row["last_tick_at"])
    return None if ticks_until == row["created_at"] else ticks_until


def _next_tick(
    every_ms: int | None, cron: str | None, zone: str, after: datetime
) -> datetime | None:
    """The first tick after `after`; None where it cannot be worked out here
    (a cron schedule without the cron extra, a time zone unknown here)."""
    if cron is not None and not cron_parser_installed():
        return None
    ticks = Ticks(None if every_ms is None else int(every_ms) // 1000, cron, zone)
    try:
        return next(iter(ticks.after(after)))
    # cronsim raises its own CronSimError; a zone this machine lacks, a LookupError.
    except Exception:
        return None
