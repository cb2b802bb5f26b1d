"""The instance page's timeline (provider/dashboard/pages.py) from history
rows as the runtime writes them: duroxide's Event, flat JSON with its kind's
`type`, event_id, source_event_id and timestamp_ms."""

from __future__ import annotations

import json
from typing import Any

from provider.dashboard.pages import sparkline, timeline


def row(event_id: int, **event: Any) -> dict[str, Any]:
    text = json.dumps({"event_id": event_id, **event})
    return {
        "execution_id": 1,
        "event_id": event_id,
        "event_type": "Event",
        "created_at": "2026-12-02T06:00:00+00:00",
        "event_head": text[:400],
        "event_data": text,
    }


def test_a_completion_is_named_and_timed_from_the_event_that_scheduled_it() -> None:
    history = [
        row(1, type="OrchestrationStarted", name="Checkout", input="{}", timestamp_ms=1_000),
        row(2, type="ActivityScheduled", name="Charge", input="42", timestamp_ms=1_010),
        row(3, type="ActivityCompleted", source_event_id=2, result='"ok"', timestamp_ms=1_260),
        row(4, type="ActivityScheduled", name="Ship", input="{}", timestamp_ms=1_270),
        row(
            5, type="ActivityFailed", source_event_id=4, details={"kind": "App"}, timestamp_ms=1_300
        ),
    ]
    lines = timeline(history)
    assert [(line.event_type, line.name, line.duration_ms) for line in lines] == [
        ("OrchestrationStarted", "Checkout", None),
        ("ActivityScheduled", "Charge", None),
        ("ActivityCompleted", "Charge", 250),
        ("ActivityScheduled", "Ship", None),
        ("ActivityFailed", "Ship", 30),
    ]
    assert lines[2].detail == '"ok"' and lines[4].detail == '{"kind": "App"}'


def test_an_event_too_long_to_read_whole_shows_its_head_and_its_column_type() -> None:
    long = {
        **row(1),
        "event_data": None,
        "event_type": "ActivityCompleted",
        "event_head": "x" * 400,
    }
    (line,) = timeline([long])
    assert line.event_type == "ActivityCompleted" and line.name is None
    assert line.detail.endswith("...") and len(line.detail) == 160


def test_text_that_is_not_json_is_shown_as_it_is() -> None:
    odd = {**row(1), "event_data": "not json", "event_head": "not json"}
    (line,) = timeline([odd])
    assert line.detail == "not json" and line.duration_ms is None


def test_the_sparkline_puts_the_peak_at_the_top_and_an_empty_hub_flat() -> None:
    spark = sparkline([0, 5, 10])
    assert spark.peak == 10 and spark.last == 10
    assert spark.points.split() == ["0.0,40.0", "120.0,20.0", "240.0,0.0"]
    assert sparkline([0, 0]).points.split() == ["0.0,40.0", "240.0,40.0"]
