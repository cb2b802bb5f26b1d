"""The dashboard's pages (provider/dashboard) served to a client, against a
hub with something to look at: what each page shows is checked against the
database. No browser here: the HTML as served."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from devkit.roles import LoginRole, operator_of
from provider import Client, TaskHub
from provider.client.hub_views import UPKEEP_TABLES
from provider.client.on_connection import OnConnection
from provider.dashboard.app import dashboard_app
from provider.deploy import migrate
from tests.support.dashboard import LOCAL, act, ask, confirm, token_of
from tests.support.db import new_schema_name
from tests.support.failed_instance import DECLINED, failed_order
from tests.support.tracing_sdk import provider_traced_by_sdk


@pytest.fixture
def dashboard(database_url: str, busy_hub: str) -> Iterator[TestClient]:
    with TestClient(dashboard_app(database_url, busy_hub), base_url=LOCAL) as client:
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


def test_the_overview_shows_the_upkeep_of_the_tables_that_churn_and_grow(
    dashboard: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    """docs/ops.md, "Maintenance": size, live and dead rows, autovacuum, HOT
    share, for the queue and lease tables and for what retention bounds."""
    html = dashboard.get("/").text
    shown = re.findall(r'<tr data-table="(\w+)">(.*?)</tr>', html, re.S)
    assert [name for name, _ in shown] == list(UPKEEP_TABLES)
    sizes = dict(
        sql.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c"
            " WHERE c.relnamespace = %s::regnamespace",
            [f'"{busy_hub}"'],
        ).fetchall()
    )
    for name, row in shown:
        assert field(row, "total_bytes") == f"{round(sizes[name] / 1048576, 1)} MB"


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
    later = dashboard.get("/instances", params={"updated_after": "2999-01-01T00:00"}).text
    assert "no instance matches" in later
    since = dashboard.get("/instances", params={"updated_after": "2000-01-01T00:00"}).text
    assert "quiet" in re.findall(r'<tr data-instance="([^"]+)">', since)


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


# -- actions ------------------------------------------------------------------


@pytest.fixture
def with_actions(database_url: str, busy_hub: str) -> Iterator[TestClient]:
    app = dashboard_app(database_url, busy_hub, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as client:
        yield client


def dead_letter_count(sql: psycopg.Connection[Any], schema: str) -> int:
    row = sql.execute(f'SELECT count(*) FROM "{schema}".dead_letters').fetchone()
    assert row is not None
    return int(row[0])


def the_dead_letter(sql: psycopg.Connection[Any], schema: str) -> int:
    row = sql.execute(f'SELECT id FROM "{schema}".dead_letters').fetchone()
    assert row is not None, "the busy hub has one dead letter"
    return int(row[0])


def test_without_allow_actions_there_is_no_form_and_a_post_is_refused(
    dashboard: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    assert '<form method="post"' not in dashboard.get("/dead-letters").text
    before = dead_letter_count(sql, busy_hub)
    refused = dashboard.post("/actions/requeue", data={"dead_letter_id": "1", "confirmed": "yes"})
    assert refused.status_code == 403 and "--allow-actions" in refused.text
    assert dead_letter_count(sql, busy_hub) == before


def test_a_post_without_the_pages_token_is_refused_and_changes_nothing(
    with_actions: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    dead_letter = the_dead_letter(sql, busy_hub)
    fields = {"dead_letter_id": str(dead_letter), "confirmed": "yes"}
    assert with_actions.post("/actions/requeue", data=fields).status_code == 403
    token_of(with_actions.get("/").text)  # the cookie is set now; the form lacks it
    assert with_actions.post("/actions/requeue", data=fields).status_code == 403
    forged = {**fields, "csrf_token": "made.up"}
    assert with_actions.post("/actions/requeue", data=forged).status_code == 403
    unicode = {**fields, "csrf_token": "n\u00e9.sig"}  # compare_digest takes ASCII only
    assert with_actions.post("/actions/requeue", data=unicode).status_code == 403
    assert dead_letter_count(sql, busy_hub) == 1


def test_an_action_asks_first_then_requeues_and_is_logged(
    with_actions: TestClient,
    sql: psycopg.Connection[Any],
    busy_hub: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    dead_letter = the_dead_letter(sql, busy_hub)
    token = token_of(with_actions.get("/dead-letters").text)
    asked = with_actions.post(
        "/actions/requeue", data={"dead_letter_id": str(dead_letter), "csrf_token": token}
    )
    assert f"Put dead letter {dead_letter} back on its queue?" in asked.text
    assert dead_letter_count(sql, busy_hub) == 1  # asking changes nothing
    with caplog.at_level("INFO", logger="provider.dashboard.actions"):
        done = act(with_actions, "requeue", {"dead_letter_id": str(dead_letter)}, "/dead-letters")
    assert f"dead letter {dead_letter} is back on its queue" in done
    assert dead_letter_count(sql, busy_hub) == 0
    queued = sql.execute(
        f'SELECT count(*) FROM "{busy_hub}".orchestrator_queue'
        " WHERE instance_id = 'stuck-instance'"
    ).fetchone()
    assert queued == (1,)
    assert any(
        "requeue" in record.getMessage() and "back on its queue" in record.getMessage()
        for record in caplog.records
    )


def test_release_cancel_and_delete_act_on_the_instance(
    with_actions: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    page = "/instances/leased-instance"
    assert 'data-action="release-lease"' in with_actions.get(page).text
    assert "lease of leased-instance is released" in act(
        with_actions, "release-lease", {"instance_id": "leased-instance"}, page
    )
    held = sql.execute(
        f'SELECT lock_token FROM "{busy_hub}".instance_locks'
        " WHERE instance_id = 'leased-instance'"
    ).fetchall()
    assert all(token is None for (token,) in held)

    assert "asked to cancel" in act(with_actions, "cancel", {"instance_id": "quiet"})
    cancel = sql.execute(
        f'SELECT count(*) FROM "{busy_hub}".orchestrator_queue'
        " WHERE instance_id = 'quiet' AND work_item LIKE '{\"CancelInstance\"%'"
    ).fetchone()
    assert cancel == (1,)

    assert "instance quiet deleted" in act(
        with_actions, "delete", {"instance_id": "quiet", "force": "yes"}
    )
    gone = sql.execute(f"SELECT count(*) FROM \"{busy_hub}\".instances WHERE instance_id = 'quiet'")
    assert gone.fetchone() == (0,)


def test_bad_fields_and_missing_instances_are_refused_with_nothing_changed(
    with_actions: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    for name, fields, status in (  # refused at the question
        ("requeue", {"dead_letter_id": "abc"}, 400),
        ("requeue", {"dead_letter_id": "\u00b2"}, 400),  # '²'.isdigit(), and int() refuses it
        ("requeue", {"dead_letter_id": "9" * 40}, 400),  # more than a bigint
        ("requeue", {"dead_letter_id": " "}, 400),
        ("requeue", {"dead_letter_id": "1", "confirmed": "yes"}, 400),  # no such field
        ("prune", {"older_than_days": "-1"}, 400),
        ("prune", {"older_than_days": "\u00b2"}, 400),
        ("nothing", {}, 404),
    ):
        asked = ask(with_actions, name, fields)
        assert asked.status_code == status, (name, fields, asked.text)
        assert "Nothing changed" in asked.text and 'id="question"' not in asked.text
    for name, fields, status in (  # asked, then refused when it would act
        ("requeue", {"dead_letter_id": "999999"}, 404),
        ("cancel", {"instance_id": "no-such-instance"}, 404),
    ):
        asked = ask(with_actions, name, fields)
        assert asked.status_code == 200 and 'id="question"' in asked.text, asked.text
        done = confirm(with_actions, name, fields, asked.text)
        assert done.status_code == status, (name, fields, done.text)
        assert "Nothing changed" in done.text
    assert dead_letter_count(sql, busy_hub) == 1


def test_prune_deletes_only_what_ended_long_enough_ago(
    with_actions: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    before = sql.execute(f'SELECT count(*) FROM "{busy_hub}".instances').fetchone()
    assert "pruned" in act(with_actions, "prune", {"older_than_days": "30"})
    assert sql.execute(f'SELECT count(*) FROM "{busy_hub}".instances').fetchone() == before


# -- under the operator role --------------------------------------------------


@pytest.fixture
def operator(database_url: str, busy_hub: str) -> Iterator[LoginRole]:
    """A login role made an operator of the hub the way the runbook says."""
    with operator_of(database_url, busy_hub) as role:
        yield role


def test_under_the_operator_role_every_page_serves_and_every_action_is_offered(
    operator: LoginRole, busy_hub: str
) -> None:
    app = dashboard_app(operator.url, busy_hub, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as client:
        for path in ("/", "/instances", "/instances/quiet", "/dead-letters", "/flow"):
            page = client.get(path)
            assert page.status_code == 200 and "Nothing changed" not in page.text, path
        offered = re.search(r'<span id="permitted">([^<]*)</span>', client.get("/").text)
        assert offered and offered.group(1) == (
            "cancel, delete, flow-limit, flow-pause, flow-remove-limit, flow-resume, prune,"
            " release-lease, requeue, restart, schedule-pause, schedule-resume"
        )


def test_an_action_the_role_may_not_take_is_neither_offered_nor_taken(
    operator: LoginRole, busy_hub: str, sql: psycopg.Connection[Any]
) -> None:
    sql.execute(
        f'REVOKE EXECUTE ON FUNCTION "{busy_hub}".taskhub_requeue_dead_letter(bigint)'
        f" FROM {operator.name}"
    )
    app = dashboard_app(operator.url, busy_hub, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as client:
        page = client.get("/dead-letters").text
        assert 'data-action="requeue"' not in page
        refused = client.post(
            "/actions/requeue",
            data={
                "dead_letter_id": str(the_dead_letter(sql, busy_hub)),
                "csrf_token": token_of(client.get("/").text),  # the prune form's
            },
        )
        assert refused.status_code == 403 and "may not requeue" in refused.text
    assert dead_letter_count(sql, busy_hub) == 1


def test_completions_are_counted_in_the_minute_they_ended(
    sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    for instance, ended_ago in (
        ("now-a", "0 s"),
        ("now-b", "1 s"),
        ("five", "5 min"),
        ("old", "2 h"),
    ):
        sql.execute(
            f'INSERT INTO "{busy_hub}".executions (instance_id, execution_id, status,'
            " started_at, completed_at)"
            " VALUES (%s, 1, 'Completed', now() - interval '3 h',"
            "         date_trunc('minute', now()) + interval '30 s' - %s::interval)",
            [instance, ended_ago],
        )
    reader = OnConnection(sql, busy_hub)
    counts = reader.run(reader.plans.completions_per_minute(30))
    assert len(counts) == 30
    assert counts[-1] == 2  # this minute (its 30th second, or a second before)
    assert counts[-6] == 1  # five minutes ago
    assert sum(counts) == 3  # two hours ago is outside the window


def test_a_filter_that_is_no_time_or_no_status_is_refused_naming_it(dashboard: TestClient) -> None:
    """Read wrongly, it would list every instance as if it had been applied."""
    for params, words in (
        ({"started_after": "yesterday"}, "started_after: 'yesterday' is neither like 30d"),
        ({"status": "Done"}, "status 'Done' is none of"),
    ):
        page = dashboard.get("/instances", params=params)
        assert page.status_code == 400 and words in unescape(page.text), page.text
        assert "data-instance" not in page.text


def test_an_instance_page_names_the_trace_its_work_continues(
    dashboard: TestClient, busy_hub: str, hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    with provider_traced_by_sdk() as (tracer_provider, _):
        application = tracer_provider.get_tracer("the-application")
        with application.start_as_current_span("POST /orders"):
            hub.start_orchestration("traced-order", "Checkout")
    row = sql.execute(
        f'SELECT traceparent FROM "{busy_hub}".taskhub_trace_contexts'
        " WHERE instance_id = 'traced-order'"
    ).fetchone()
    assert row is not None
    trace_id = str(row[0]).split("-")[1]
    page = dashboard.get("/instances/traced-order").text
    assert re.search(rf'<dd id="trace"><code>{trace_id}</code></dd>', page)
    assert 'id="trace"' not in dashboard.get("/instances/quiet").text


def test_a_hub_older_than_the_trace_contexts_has_no_trace_to_show(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0018")
    reader = OnConnection(sql, schema)
    assert reader.run(reader.plans.trace_id_of("anything")) is None


def test_a_failed_instance_shows_its_whole_error_and_what_failed_on_the_way(
    database_url: str, hub: TaskHub, hub_schema: str
) -> None:
    """Issue 40: the page of a failed instance answers "why did it fail?": the
    error whole (the timeline cuts details at 160 characters), and each failed
    activity with how often it was scheduled."""
    failed_order(hub, "order-1")
    with TestClient(dashboard_app(database_url, hub_schema), base_url=LOCAL) as client:
        html = unescape(client.get("/instances/order-1").text)
    failure = html.split('<section id="failure">')[1].split("</section>")[0]
    assert f'<pre class="error">{DECLINED}</pre>' in failure
    assert "ActivityFailed <code>Charge</code> (scheduled 2 times)" in failure


def test_the_schedules_page_lists_every_schedule(database_url: str, hub_schema: str) -> None:
    with Client.connect(database_url, hub_schema) as client:
        client.set_schedule(
            "nightly", "Report", {"kind": "daily"}, cron="0 2 * * *", priority=4,
            labels={"tenant": "acme"},
        )  # fmt: skip
        client.set_schedule("heartbeat", "Ping", every_s=30)
        client.pause_schedule("heartbeat")
    with TestClient(dashboard_app(database_url, hub_schema), base_url=LOCAL) as dashboard:
        html = unescape(dashboard.get("/schedules").text)
    rows = dict(re.findall(r'<tr data-schedule="([^"]+)">(.*?)</tr>', html, re.S))
    assert list(rows) == ["heartbeat", "nightly"]
    assert "every 30 s" in rows["heartbeat"] and "<td>yes</td>" in rows["heartbeat"]
    assert "<code>0 2 * * *</code>" in rows["nightly"]
    assert '"kind":"daily"' in rows["nightly"].replace(" ", "")
    assert "priority 4 <code>tenant=acme</code>" in rows["nightly"]
    assert '<td data-field="steering"></td>' in rows["heartbeat"]


def test_the_schedules_page_shows_the_next_and_the_latest_tick_and_operators_pause_and_resume(
    database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """Issue 58: the page showed the moment a schedule was made as its
    "latest tick", no next tick, no way to pause or resume, and no link to
    the latest tick's instance."""
    made = datetime(2026, 12, 5, 9, 0, 0, tzinfo=UTC)
    with Client.connect(database_url, hub_schema) as client:
        client.set_schedule("heartbeat", "Ping", every_s=30, now=made)
        client.set_schedule("fresh", "Ping", every_s=60, now=made)
        tick = made + timedelta(seconds=30)
        assert client.fire_schedule_outcome("heartbeat", tick, True).taken
        schedules = {s.name: s for s in client.list_schedules()}
    assert schedules["fresh"].last_tick_at is None  # was the moment it was made
    assert schedules["fresh"].next_tick == made + timedelta(seconds=60)
    assert schedules["heartbeat"].last_tick_at == tick
    assert schedules["heartbeat"].last_instance_id == "schedule:heartbeat:2026-12-05T09:00:30Z"
    assert schedules["heartbeat"].next_tick == tick + timedelta(seconds=30)

    app = dashboard_app(database_url, hub_schema, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as operator:
        html = unescape(operator.get("/schedules").text)
        rows = dict(re.findall(r'<tr data-schedule="([^"]+)">(.*?)</tr>', html, re.S))
        assert "none yet" in rows["fresh"]
        assert '/instances/schedule%3Aheartbeat%3A2026-12-05T09%3A00%3A30Z"' in rows["heartbeat"]
        assert "2026-12-05 09:01:00" in rows["heartbeat"]  # the next tick
        assert 'data-action="schedule-pause"' in rows["heartbeat"]
        done = act(operator, "schedule-pause", {"name": "heartbeat"}, "/schedules")
        assert "schedule heartbeat paused" in done
        html = unescape(operator.get("/schedules").text)
        rows = dict(re.findall(r'<tr data-schedule="([^"]+)">(.*?)</tr>', html, re.S))
        assert 'data-action="schedule-resume"' in rows["heartbeat"]
        assert '<td data-field="next">paused</td>' in rows["heartbeat"]
        assert "heartbeat resumed" in act(
            operator, "schedule-resume", {"name": "heartbeat"}, "/schedules"
        )
    paused = sql.execute(
        f"SELECT paused FROM \"{hub_schema}\".taskhub_schedules WHERE name = 'heartbeat'"
    ).fetchone()
    assert paused == (False,)
    with TestClient(dashboard_app(database_url, hub_schema), base_url=LOCAL) as viewer:
        assert "data-action" not in viewer.get("/schedules").text


def test_the_schedules_page_of_a_hub_before_0027(database_url: str) -> None:
    schema = new_schema_name("old")
    migrate.upgrade(database_url, schema, "0026")
    with TestClient(dashboard_app(database_url, schema), base_url=LOCAL) as dashboard:
        page = dashboard.get("/schedules")
    assert page.status_code == 200 and "older than revision 0027" in page.text


def test_the_flow_page_shows_what_is_paused_and_limited(database_url: str, hub_schema: str) -> None:
    with Client.connect(database_url, hub_schema) as client:
        client.set_activity_limit("Charge", 5, reason="PSP <quota>")
        client.pause_activity("Sms")
    with TestClient(dashboard_app(database_url, hub_schema), base_url=LOCAL) as dashboard:
        page = dashboard.get("/flow")
    assert page.status_code == 200
    assert "PSP &lt;quota&gt;" in page.text  # stored text is never markup
    rows = dict(re.findall(r'<tr data-rule="([^"]+)">(.*?)</tr>', unescape(page.text), re.S))
    assert list(rows) == ["Charge", "Sms"]
    assert '<td class="n">5</td>' in rows["Charge"] and "<td>no</td>" in rows["Charge"]
    assert "<td>yes</td>" in rows["Sms"]


def test_an_operator_changes_the_flow_rules_from_the_flow_page(
    database_url: str, hub_schema: str
) -> None:
    """Pause, limit, resume and remove a limit through the question and its
    confirmation; a viewer's page offers none of them."""
    with TestClient(
        dashboard_app(database_url, hub_schema, allow_actions=True), base_url=LOCAL
    ) as dashboard:
        page = dashboard.get("/flow").text
        assert 'data-action="flow-pause"' in page and 'data-action="flow-limit"' in page
        # The limit form's fields are fields, not text a browser shows.
        assert '<input name="max_running" type="number"' in page and "&lt;input" not in page
        assert "label tenant=acme paused" in act(
            dashboard, "flow-pause", {"kind": "label", "name": "tenant=acme"}, "/flow"
        )
        assert "each value of label tenant: at most 2 running (was no limit)" in act(
            dashboard,
            "flow-limit",
            {"kind": "label_each", "name": "tenant", "max_running": "2", "reason": "fair"},
            "/flow",
        )
        page = dashboard.get("/flow").text
        assert 'data-action="flow-resume"' in page and 'data-action="flow-remove-limit"' in page
        for name, fields, message in (
            ("flow-pause", {"kind": "queue", "name": "x"}, "kind must be one of"),
            ("flow-limit", {"kind": "activity", "name": "A", "max_running": "0"}, "from 1 to"),
            ("flow-pause", {"kind": "label", "name": "Tenant=x"}, "is not key=value"),
        ):
            asked = ask(dashboard, name, fields, "/flow")
            if asked.status_code == 200 and 'id="question"' in asked.text:
                asked = confirm(dashboard, name, fields, asked.text)
            assert asked.status_code == 400 and message in unescape(asked.text), asked.text
        assert "label tenant=acme resumed" in act(
            dashboard, "flow-resume", {"kind": "label", "name": "tenant=acme"}, "/flow"
        )
        assert "no limit now" in act(
            dashboard, "flow-remove-limit", {"kind": "label_each", "name": "tenant"}, "/flow"
        )
    with Client.connect(database_url, hub_schema) as client:
        assert client.flow_rules() == []
    with TestClient(dashboard_app(database_url, hub_schema), base_url=LOCAL) as viewer:
        assert "data-action" not in viewer.get("/flow").text
