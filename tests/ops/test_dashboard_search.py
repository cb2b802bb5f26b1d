"""The dashboard answers "which instances, and why did it fail?" (issue 40):
a search by instance ID prefix and a part of the name, the CLI's time
syntax and presets, counts by status that link to their list, a list behind
every overview count, and the whole dashboard under a sub-path. The HTML as
served; tests/ops/test_dashboard_browser.py clicks through it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from html import unescape
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from devkit.workloads.work_items import start_orchestration
from provider import TaskHub
from provider.client.hub_views import VIEWS
from provider.client.on_connection import OnConnection
from provider.dashboard.app import dashboard_app
from provider.dashboard.hub import STATUS_COUNTS_FOR_S, Hub
from provider.dashboard.paths import checked_root_path
from provider.deploy import migrate
from tests.support.busy_hub import make_busy
from tests.support.dashboard import LOCAL
from tests.support.db import new_schema_name
from tests.support.failed_instance import failed_order

ROWS = re.compile(r'<tr data-instance="([^"]+)">')


def listed(client: TestClient, **params: str) -> set[str]:
    page = client.get("/instances", params=params)
    assert page.status_code == 200, page.text
    return set(ROWS.findall(page.text))


@pytest.fixture
def orders(hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    """Pending orders and refunds (known only by their start messages), a
    failed order that started, and the busy hub's instances."""
    # Each of these fetches what it queued: on an empty queue, before the rest.
    failed_order(hub, "order-failed")  # a started instance, orchestration TestOrch
    make_busy(hub, hub_schema, sql)
    for instance, name in (
        ("order-17", "ProcessOrder"),
        ("order-18", "ProcessOrder"),
        ("refund-17", "RefundOrder"),
        ("order-17-audit", "Audit"),
    ):
        hub.enqueue_orchestrator_work(instance, start_orchestration(instance, name))
    return hub_schema


@pytest.fixture
def dashboard(database_url: str, orders: str) -> Iterator[TestClient]:
    with TestClient(dashboard_app(database_url, orders), base_url=LOCAL) as client:
        yield client


def test_the_search_finds_by_id_prefix_and_any_part_of_the_name(dashboard: TestClient) -> None:
    """The issue's miss: `Process` found nothing where `ProcessOrder` found 2."""
    assert listed(dashboard, id="order-1") == {"order-17", "order-18", "order-17-audit"}
    assert listed(dashboard, id="order-17") == {"order-17", "order-17-audit"}
    assert listed(dashboard, name="Process") == {"order-17", "order-18"}
    assert listed(dashboard, name="order") == {"order-17", "order-18", "refund-17"}  # either case
    assert listed(dashboard, id="order-", name="testorch") == {"order-failed"}  # started
    assert listed(dashboard, id="order-", status="Failed") == {"order-failed"}
    assert listed(dashboard, id="nothing-starts-so") == set()
    # A prefix is a prefix, not a pattern: % and _ match only themselves.
    assert listed(dashboard, id="order%") == listed(dashboard, id="order_") == set()


def test_the_time_filters_take_the_clis_syntax_and_the_presets_link_to_it(
    dashboard: TestClient,
) -> None:
    everything = listed(dashboard)
    assert {"order-17", "order-failed", "quiet"} <= everything
    for preset in ("1h", "24h", "7d", "30d"):
        assert listed(dashboard, started_after=preset) == everything
    assert listed(dashboard, started_before="1h") == set()
    assert listed(dashboard, updated_after="2000-01-01T00:00") == everything
    html = unescape(dashboard.get("/instances", params={"id": "order-"}).text)
    presets = re.findall(r'<a href="(/instances\?[^"]+)"\s*(?:class="current")?>(\w+)</a>', html)
    assert [label for _, label in presets] == ["1h", "24h", "7d", "30d"]
    # A preset keeps the search it was clicked from.
    assert all("id=order-" in href and f"started_after={label}" in href for href, label in presets)


def test_the_overview_counts_instances_by_status_each_a_link_to_its_list(
    dashboard: TestClient, sql: psycopg.Connection[Any], orders: str
) -> None:
    html = dashboard.get("/").text
    shown = dict(re.findall(r'data-status="(\w+)">\w+ <b>(\d+)</b>', html))
    assert list(shown) == ["Running", "Completed", "Failed", "ContinuedAsNew", "Pending"]
    for status, count in shown.items():
        assert f'href="/instances?status={status}"' in html
        assert len(listed(dashboard, status=status)) == int(count), status
    assert shown["Failed"] == "1" and int(shown["Pending"]) >= 4


def test_status_counts_are_read_at_most_every_few_seconds(
    database_url: str, orders: str, hub: TaskHub
) -> None:
    """The overview refreshes every 5 s; counting reads every instance."""
    now = [1000.0]
    dashboard_hub = Hub(database_url, orders, clock=lambda: now[0])
    dashboard_hub.open()
    try:
        before = dashboard_hub.status_counts()
        hub.enqueue_orchestrator_work("order-19", start_orchestration("order-19"))
        assert dashboard_hub.status_counts() == before
        now[0] += STATUS_COUNTS_FOR_S
        after = dashboard_hub.status_counts()
        assert before is not None and after is not None
        assert after["Pending"] == before["Pending"] + 1
    finally:
        dashboard_hub.close()


def test_counting_that_would_wait_gives_up_instead_of_holding_the_page(
    database_url: str, orders: str, sql: psycopg.Connection[Any]
) -> None:
    """A hub of millions, or a table locked by a migration: the count stops
    at its timeout and the overview says so."""
    with (
        psycopg.connect(database_url) as holder,
        psycopg.connect(database_url, autocommit=True) as reader,
    ):
        holder.execute(f'LOCK TABLE "{orders}".executions IN ACCESS EXCLUSIVE MODE')
        hub = OnConnection(reader, orders)
        assert hub.run(hub.plans.status_counts(timeout_ms=200)) is None
        holder.rollback()
        counts = hub.run(hub.plans.status_counts(timeout_ms=200))
        assert counts is not None and counts["Failed"] == 1
        # The timeout was the transaction's own: the connection keeps none.
        assert reader.execute("SHOW statement_timeout").fetchone() == ("0",)


def test_every_overview_count_links_to_the_list_it_counts(
    dashboard: TestClient, sql: psycopg.Connection[Any], orders: str
) -> None:
    html = dashboard.get("/").text
    for name, instance in (("stuck", None), ("poison", "hot"), ("leases", "leased-instance")):
        assert f'href="/lists/{name}"' in html
        page = dashboard.get(f"/lists/{name}")
        assert page.status_code == 200
        rows = page.text.count("<tr data-row>")
        view = VIEWS[name].relation
        total = sql.execute(f'SELECT count(*) FROM "{orders}".{view}').fetchone()
        assert total is not None and rows == total[0], name
        if instance is not None:
            assert f'href="/instances/{instance}"' in page.text
    assert (
        'href="/dead-letters#shielded"' in html
        and 'id="shielded"' in dashboard.get("/dead-letters").text
    )
    assert dashboard.get("/lists/no-such-list").status_code == 404


def test_a_search_on_a_hub_before_0028_says_to_upgrade(database_url: str) -> None:
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0027")
    with TestClient(dashboard_app(database_url, schema), base_url=LOCAL) as client:
        assert client.get("/instances").status_code == 200  # the filters it always had
        page = client.get("/instances", params={"id": "order-"})
    assert page.status_code == 409 and "older than revision 0028" in unescape(page.text)


# -- a sub-path ------------------------------------------------------------------

LINKS = re.compile(r'(?<![\w-])(?:href|action|src|data-refresh)="([^"#]*)')


def test_under_a_root_path_every_page_link_and_form_carries_it(
    database_url: str, orders: str
) -> None:
    """Behind a proxy that serves the dashboard at /ops/taskhub and passes
    the path on as it came (riverui's PATH_PREFIX, pg-boss's base path)."""
    app = dashboard_app(database_url, orders, allow_actions=True, root_path="/ops/taskhub")
    with TestClient(app, base_url=LOCAL) as client:
        pages = ["/ops/taskhub", "/ops/taskhub/", "/ops/taskhub/instances?id=order-"]
        pages += ["/ops/taskhub/instances/order-failed", "/ops/taskhub/lists/stuck"]
        pages += ["/ops/taskhub/dead-letters", "/ops/taskhub/schedules"]
        for page in pages:
            answer = client.get(page)
            assert answer.status_code == 200, (page, answer.status_code)
            links = LINKS.findall(answer.text)
            elsewhere = [link for link in links if not link.startswith("/ops/taskhub/")]
            assert links and not elsewhere, (page, elsewhere)
        assert client.get("/ops/taskhub/static/dashboard.css").status_code == 200
        assert "order-17" in client.get("/ops/taskhub/instances", params={"id": "order-"}).text
        for outside in ("/", "/instances", "/static/dashboard.css", "/ops/taskhubx/"):
            assert client.get(outside).status_code == 404, outside
        cookie = client.get("/ops/taskhub/dead-letters").headers["set-cookie"]
        assert "Path=/ops/taskhub" in cookie


@pytest.mark.parametrize("bad", ["taskhub", "/taskhub/", "/a b", "/a//b", "/../x", "/x?y"])
def test_a_root_path_that_is_no_sub_path_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="is not like /taskhub"):
        checked_root_path(bad)
    assert checked_root_path("/") == checked_root_path("") == ""
