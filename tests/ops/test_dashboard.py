"""The dashboard's pages (provider/dashboard) served to a client, against a
hub with something to look at: what each page shows is checked against the
database. No browser here: the HTML as served."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from provider.dashboard.app import dashboard_app


@pytest.fixture
def dashboard(database_url: str, busy_hub: str) -> Iterator[TestClient]:
    with TestClient(dashboard_app(database_url, busy_hub)) as client:
        yield client


def field(html: str, name: str) -> str:
    """The text of the element marked data-field=name."""
    found = re.search(rf'data-field="{re.escape(name)}"[^>]*>([^<]*)<', html)
    assert found, f"no data-field {name} in the page"
    return found.group(1).strip()


def queue_row(html: str, queue: str) -> str:
    found = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', html, re.S)
    assert found, f"no row of queue {queue}"
    return found.group(1)


def test_the_overview_shows_what_the_views_hold(
    dashboard: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    page = dashboard.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    html = page.text
    health = {
        row[0]: row
        for row in sql.execute(
            "SELECT queue, ready, scheduled, leased, dead_letters"
            f' FROM "{busy_hub}".taskhub_queue_health'
        ).fetchall()
    }
    for queue, (_, ready, scheduled, leased, dead) in health.items():
        row = queue_row(html, queue)
        assert field(row, "ready") == str(ready)
        assert field(row, "scheduled") == str(scheduled)
        assert field(row, "leased") == str(leased)
        assert field(row, "dead_letters") == str(dead)
    dead_letters = sql.execute(f'SELECT count(*) FROM "{busy_hub}".dead_letters').fetchone()
    poison = sql.execute(f'SELECT count(*) FROM "{busy_hub}".taskhub_poison_candidates').fetchone()
    assert dead_letters is not None and poison is not None
    assert field(html, "dead_letters") == str(dead_letters[0]) == "1"
    assert field(html, "poison") == str(poison[0])
    assert field(html, "orchestration-live") == "1"  # the busy hub's leased turn
    assert field(html, "activity-live") == "1"
    assert 'data-refresh="/panels/overview"' in html  # it refreshes itself


def test_the_overview_panel_is_the_fragment_the_page_refreshes_with(
    dashboard: TestClient,
) -> None:
    panel = dashboard.get("/panels/overview")
    assert panel.status_code == 200
    assert "<html" not in panel.text and 'data-queue="orchestrator"' in panel.text


def test_the_instances_page_lists_started_and_pending_instances_and_filters(
    dashboard: TestClient,
) -> None:
    html = dashboard.get("/instances").text
    listed = re.findall(r'<tr data-instance="([^"]+)">', html)
    # "quiet" started; the others are known only by their messages.
    assert {"quiet", "leased-instance", "hot"} <= set(listed)
    pending = dashboard.get("/instances", params={"status": "Pending"}).text
    assert "quiet" not in re.findall(r'<tr data-instance="([^"]+)">', pending)
    none = dashboard.get("/instances", params={"name": "NoSuchOrchestration"}).text
    assert "no instance matches" in none


def test_one_instance_shows_its_executions_history_and_lease(
    dashboard: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    html = dashboard.get("/instances/quiet").text
    events = sql.execute(
        f'SELECT execution_id, event_id, event_type FROM "{busy_hub}".history'
        " WHERE instance_id = 'quiet' ORDER BY 1, 2"
    ).fetchall()
    assert events, "the busy hub recorded quiet's start"
    shown = re.findall(r'<tr data-event="(\d+)-(\d+)">.*?<td>(\w+)</td>', html, re.S)
    assert [(int(e), int(n), t) for e, n, t in shown] == [tuple(row) for row in events]
    leased = dashboard.get("/instances/leased-instance").text
    assert re.search(r'class="lease">orchestration\s*: \d+ ms left', leased)


def test_an_unknown_instance_is_a_page_that_says_so(dashboard: TestClient) -> None:
    page = dashboard.get("/instances/no-such-instance")
    assert page.status_code == 200 and "instance no-such-instance not found" in page.text


def test_the_dead_letters_page_says_why_and_since_when(
    dashboard: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    html = dashboard.get("/dead-letters").text
    row = sql.execute(f'SELECT id, reason FROM "{busy_hub}".dead_letters').fetchone()
    assert row is not None
    found = re.search(rf'<tr data-dead-letter="{row[0]}">(.*?)</tr>', html, re.S)
    assert found and row[1] in found.group(1) and "stuck-instance" in found.group(1)


def test_the_pages_link_to_each_other(dashboard: TestClient) -> None:
    overview = dashboard.get("/").text
    for link in ('href="/instances"', 'href="/dead-letters"'):
        assert link in overview
    instances = dashboard.get("/instances").text
    assert 'href="/instances/quiet"' in instances
    assert dashboard.get("/static/refresh.js").status_code == 200
