"""What each page shows, as plain values for its template: the runbook's
plans (provider/client/operator_plans.py) and TaskHub.find_instances,
shaped for a person."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from provider.hub_rows import (
    HistoryRow,
    InstanceReport,
    Overview,
    PendingInstance,
    ScheduleListing,
    plain,
)
from provider.moments import EXAMPLE, parse_moment
from provider.types import INSTANCE_STATUSES

Row = dict[str, Any]

# The sparkline's box, in SVG user units.
SPARK_WIDTH, SPARK_HEIGHT = 240, 40


@dataclass(frozen=True)
class Sparkline:
    points: str  # an SVG polyline's points
    peak: int
    last: int


def sparkline(counts: list[int]) -> Sparkline:
    """Counts per minute as a polyline scaled to the box (the peak at the top)."""
    peak = max(counts, default=0)
    step = SPARK_WIDTH / max(len(counts) - 1, 1)
    points = " ".join(
        f"{n * step:.1f},{SPARK_HEIGHT - (count / peak * SPARK_HEIGHT if peak else 0):.1f}"
        for n, count in enumerate(counts)
    )
    return Sparkline(points, peak, counts[-1] if counts else 0)


def overview_values(found: Overview, statuses: dict[str, int] | None) -> dict[str, Any]:
    leases = {
        (kind, state): found.leases.get((kind, live), 0)
        for kind in ("orchestration", "activity")
        for live, state in ((True, "live"), (False, "expired"))
    }
    return {
        "queues": found.queues,
        "leases": leases,
        "poison": found.poison,
        "stuck": found.stuck,
        "dead_letters": found.dead_letters,
        "shielded": found.shielded,
        "spark": sparkline(found.completions_per_minute),
        "minutes": len(found.completions_per_minute),
        "tables": found.tables,
        # Every status, in the order the instances page lists them (None: too
        # many instances to count in time).
        "statuses": None
        if statuses is None
        else [(status, statuses.get(status, 0)) for status in INSTANCE_STATUSES],
    }


@dataclass(frozen=True)
class TimelineEvent:
    execution_id: int
    event_id: int
    event_type: str
    at: str
    name: str | None  # the activity, timer or sub-orchestration it is about
    duration_ms: int | None  # a completion: since the event that scheduled it
    detail: str  # the result, error or input, cut


# What a person reads first of each kind of event.
DETAIL_FIELDS = (
    "result",
    "output",
    "error",
    "details",
    "data",
    "status",
    "input",
    "reason",
    "fire_at_ms",
)


def timeline(history: list[Row]) -> list[TimelineEvent]:
    """The history as the runtime wrote it (duroxide's Event: event_id,
    source_event_id, timestamp_ms, and the kind's `type` and fields): a
    completion is named after, and timed from, the event that scheduled it."""
    events = [(row, _parsed(row.get("event_data"))) for row in history]
    scheduled = {
        (int(row["execution_id"]), int(row["event_id"])): event
        for row, event in events
        if event is not None
    }
    lines = []
    for row, event in events:
        execution = int(row["execution_id"])
        source = scheduled.get((execution, _int(event, "source_event_id") or -1))
        name = _text(event, "name") or _text(source, "name")
        started, ended = _int(source, "timestamp_ms"), _int(event, "timestamp_ms")
        lines.append(
            TimelineEvent(
                execution_id=execution,
                event_id=int(row["event_id"]),
                event_type=_text(event, "type") or str(row["event_type"]),
                at=moment_text(row["created_at"]),
                name=name,
                duration_ms=ended - started if started is not None and ended is not None else None,
                detail=_detail(event, str(row.get("event_head") or "")),
            )
        )
    return lines


def moment_text(value: object) -> str:
    """A stored time as a person reads it: 2026-12-02 12:42:28.016 (UTC as stored)."""
    moment = value
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(moment, datetime):
        return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d}"
    return str(value)


def _parsed(event_data: object) -> dict[str, Any] | None:
    if not isinstance(event_data, str):
        return None  # longer than the page reads whole
    try:
        event = json.loads(event_data)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def _text(event: dict[str, Any] | None, field: str) -> str | None:
    value = event.get(field) if event else None
    return value if isinstance(value, str) else None


def _int(event: dict[str, Any] | None, field: str) -> int | None:
    value = event.get(field) if event else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _detail(event: dict[str, Any] | None, head: str) -> str:
    if event is not None:
        for field in DETAIL_FIELDS:
            if field in event:
                value = event[field]
                text = value if isinstance(value, str) else json.dumps(value)
                return text if len(text) <= 160 else text[:157] + "..."
    return head if len(head) <= 160 else head[:157] + "..."


# The runbook's lists the overview's counts link to (/lists/{name}).
LISTS = {
    "leases": "Leases held",
    "poison": "Poison candidates",
    "stuck": "Stuck instances",
}

# The instances page's time filters, as the page labels them (UTC), and the
# presets it links to: the CLI's syntax (provider/moments.py).
TIME_FILTERS = (
    ("started_after", "started after"),
    ("started_before", "started before"),
    ("updated_after", "updated after"),
    ("updated_before", "updated before"),
)
PRESETS = ("1h", "24h", "7d", "30d")


def moment(name: str, value: str | None, now: datetime | None = None) -> datetime | None:
    """A time filter's value; ValueError naming the filter when it is no time."""
    if not value:
        return None
    try:
        return parse_moment(value, now)
    except ValueError as error:
        raise ValueError(f"{name}: {error} ({EXAMPLE})") from None


def instance_status(report: InstanceReport) -> str:
    """Pending (known only by its messages), else its current execution's status."""
    instance = report.instance
    if isinstance(instance, PendingInstance):
        return instance.status
    statuses = {row.execution_id: row.status for row in report.executions}
    status = statuses.get(instance.current_execution_id) or (
        report.executions[-1].status if report.executions else None
    )
    return str(status or "Running")


def instance_values(report: InstanceReport, history: list[HistoryRow]) -> dict[str, Any]:
    shown = plain(report)
    status = instance_status(report)
    instance = report.instance
    return {
        "status": status,
        "ended": status in ("Completed", "Failed"),
        "current_execution": ""
        if isinstance(instance, PendingInstance)
        else instance.current_execution_id,
        "restarts": shown["restarts"],
        "instance": shown["instance"],
        "executions": shown["executions"],
        "queued": shown["queued"],
        "leases": shown["leases"],
        "dead_letters": shown["dead_letters"],
        "failure": shown["failure"],
        "timeline": timeline(plain(history)),
    }


# A schedule's failed fires, which a hub before revision 0029 does not count:
# its page shows them blank there.
FAILURE_FIELDS = ("failures", "last_error", "paused_reason")


def schedule_values(listing: ScheduleListing | None) -> list[Row] | None:
    """Each schedule as its page shows it; None on a hub without schedules."""
    if listing is None:
        return None
    rows = [plain(schedule) for schedule in listing.schedules]
    if not listing.counts_failures:
        for row in rows:
            for name in FAILURE_FIELDS:
                del row[name]
    return rows
