"""What each page shows, as plain values for its template: the reads of
provider.deploy.runbook and TaskHub.find_instances, shaped for a person."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from provider.deploy import runbook
from provider.deploy.runbook import Overview, Row

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


def overview_values(found: Overview) -> dict[str, Any]:
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
    }


@dataclass(frozen=True)
class TimelineEvent:
    execution_id: int
    event_id: int
    event_type: str
    at: str
    name: str | None  # the activity or sub-orchestration named, if any
    detail: str  # the result, error or input, cut


def timeline(history: list[Row]) -> list[TimelineEvent]:
    return [
        TimelineEvent(
            execution_id=int(row["execution_id"]),
            event_id=int(row["event_id"]),
            event_type=str(row["event_type"]),
            at=str(row["created_at"]),
            name=_named(str(row["event_data"])),
            detail=_detail(str(row["event_data"])),
        )
        for row in history
    ]


def _parsed(event_data: str) -> Any:
    try:
        return json.loads(event_data)
    except ValueError:
        return None  # cut at 400 characters: not JSON any more


def _named(event_data: str) -> str | None:
    event = _parsed(event_data)
    if not isinstance(event, dict):
        return None
    body = next(iter(event.values()), None) if len(event) == 1 else event
    if isinstance(body, dict):
        name = body.get("name")
        return str(name) if name is not None else None
    return None


def _detail(event_data: str) -> str:
    return event_data if len(event_data) <= 160 else event_data[:157] + "..."


def moment(value: str | None) -> datetime | None:
    """A time filter of the instances page (an HTML datetime-local field)."""
    if not value:
        return None
    try:
        found = datetime.fromisoformat(value)
    except ValueError:
        return None
    return found if found.tzinfo else found.replace(tzinfo=UTC)  # the page speaks UTC


def instance_values(report: runbook.InstanceReport, history: list[Row]) -> dict[str, Any]:
    return {
        "instance": report.instance,
        "executions": report.executions,
        "queued": report.queued,
        "leases": report.leases,
        "dead_letters": report.dead_letters,
        "timeline": timeline(history),
    }
