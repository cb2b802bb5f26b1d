"""Restart on the released duroxide 0.2.2 runtime (docs/ops.md, "An
orchestration failed"): an order fails, the cause is fixed, and the order is
run again, from the command line as the operator role and from the Client,
under its own id (its next execution) and under a new id. Each completes on
the runtime; the record says who restarted it, from which outcome and why,
and the failed run stays readable. A running instance is refused in one
line, and a request repeated writes nothing. duroxide 0.2.2 has no restart:
an ended instance's start is dropped by the runtime (test below)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from html import unescape
from typing import Any

import duroxide
import psycopg
import pytest
from starlette.testclient import TestClient

from devkit.roles import LoginRole, operator_of
from devkit.waiting import wait_until
from provider import Client, InstanceRunning, Restart
from provider.cli import main
from provider.dashboard.access import AccessPolicy
from provider.dashboard.app import dashboard_app
from provider.dashboard.passwords import hash_line, read_accounts
from provider.deploy import migrate
from tests.support.dashboard import LOCAL, act, basic
from tests.support.db import new_schema_name

WAIT_MS = 30_000


@dataclass
class Shop:
    """The payment provider's view: which cards it declines now."""

    declined: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def charge(self, card: str) -> str:
        with self.lock:
            if card in self.declined:
                raise RuntimeError(f"card {card} declined")
        return f"charged {card}"


@dataclass
class LiveHub:
    client: Any
    schema: str
    operator: LoginRole
    shop: Shop
    url: str


@pytest.fixture(scope="module")
def live(database_url: str) -> Iterator[LiveHub]:
    schema = new_schema_name("restart")
    migrate.upgrade(database_url, schema)
    shop = Shop()
    provider = duroxide.PostgresProvider.connect_with_schema(database_url, schema)
    runtime = duroxide.Runtime(provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10))

    @runtime.register_activity("Charge")
    def charge(ctx: Any, card: str) -> str:
        return shop.charge(card)

    @runtime.register_orchestration("Order")
    def order(ctx: Any, card: str) -> Any:
        receipt = yield ctx.schedule_activity("Charge", card)
        return receipt

    @runtime.register_orchestration("Hold")
    def hold(ctx: Any, _: Any) -> Any:
        ctx.set_custom_status("held")
        released = yield ctx.wait_for_event("Release")
        return released

    runtime.start()
    try:
        with operator_of(database_url, schema) as operator:
            yield LiveHub(duroxide.Client(provider), schema, operator, shop, database_url)
    finally:
        runtime.shutdown(timeout_ms=2_000)


def failed_order(live: LiveHub, instance_id: str, card: str) -> str:
    """An order that failed on a declined card, whose cause is then fixed."""
    live.shop.declined.add(card)
    live.client.start_orchestration(instance_id, "Order", card)
    result = live.client.wait_for_orchestration(instance_id, WAIT_MS)
    assert result.status == "Failed"
    live.shop.declined.discard(card)
    return str(result.error)


def operator_cli(capsys: pytest.CaptureFixture[str], live: LiveHub, *argv: str) -> Any:
    capsys.readouterr()
    code = main([*argv, "--url", live.operator.url, "--schema", live.schema, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, (argv, err)
    return json.loads(out)


def executions(live: LiveHub, instance_id: str) -> list[tuple[int, str]]:
    with psycopg.connect(live.url) as conn:
        rows = conn.execute(
            f'SELECT execution_id, status FROM "{live.schema}".executions'
            " WHERE instance_id = %s ORDER BY 1",
            [instance_id],
        ).fetchall()
    return [(int(execution), str(status)) for execution, status in rows]


def records(live: LiveHub, instance_id: str) -> list[Restart]:
    with Client.connect(live.url, live.schema) as client:
        return client.restarts(instance_id)


def test_the_command_line_restarts_a_failed_order_under_its_own_id(
    capsys: pytest.CaptureFixture[str], live: LiveHub
) -> None:
    error = failed_order(live, "order-cli", "4242")
    done = operator_cli(
        capsys, live, "restart", "order-cli", "--reason", "card updated, INC-7", "--yes"
    )
    assert (done["new_instance_id"], done["new_execution_id"]) == ("order-cli", 2)
    result = live.client.wait_for_orchestration("order-cli", WAIT_MS)
    assert (result.status, result.output) == ("Completed", "charged 4242")
    # The failed run stays readable, as the instance's first execution.
    assert executions(live, "order-cli") == [(1, "Failed"), (2, "Completed")]
    [record] = records(live, "order-cli")
    assert (record.from_execution_id, record.from_status) == (1, "Failed")
    assert "declined" in (record.from_output or "") and "declined" in error
    assert (record.restarted_by, record.reason) == (live.operator.name, "card updated, INC-7")
    assert record.input == '"4242"'
    # The on-call reads the same record with the instance.
    shown = operator_cli(capsys, live, "inspect", "instance", "order-cli")
    assert [(r["from_status"], r["reason"]) for r in shown["restarts"]] == [
        ("Failed", "card updated, INC-7")
    ]
    capsys.readouterr()
    assert (
        main(["inspect", "instance", "order-cli", "--url", live.url, "--schema", live.schema]) == 0
    )
    printed = capsys.readouterr().out
    assert "order-cli execution 1 (Failed)" in printed and "card updated, INC-7" in printed


def test_the_command_line_restarts_a_failed_order_under_a_new_id(
    capsys: pytest.CaptureFixture[str], live: LiveHub
) -> None:
    failed_order(live, "order-cli-2", "5555")
    done = operator_cli(capsys, live, "restart", "order-cli-2", "--new-id", "order-cli-2b", "--yes")
    assert (done["new_instance_id"], done["new_execution_id"]) == ("order-cli-2b", 1)
    result = live.client.wait_for_orchestration("order-cli-2b", WAIT_MS)
    assert (result.status, result.output) == ("Completed", "charged 5555")
    # The old instance stays as it was, linked to the new one both ways.
    assert live.client.get_status("order-cli-2").status == "Failed"
    assert records(live, "order-cli-2") == records(live, "order-cli-2b")
    [record] = records(live, "order-cli-2")
    assert (record.instance_id, record.new_instance_id) == ("order-cli-2", "order-cli-2b")


def test_the_client_restarts_under_its_own_id_and_a_new_one_with_another_input(
    live: LiveHub,
) -> None:
    failed_order(live, "order-api", "1111")
    failed_order(live, "order-api-2", "2222")
    with Client.connect(live.url, live.schema) as client:
        same = client.restart("order-api", reason="retry after the fix", execution_id=1)
        other = client.restart("order-api-2", new_instance_id="order-api-2b", input="3333")
        # The same requests again, even once the restarted run has ended:
        # nothing more is written.
        assert client.restart("order-api", execution_id=1).repeated is True
        assert client.restart("order-api-2", new_instance_id="order-api-2b").repeated is True
    assert (same.new_execution_id, same.from_status, same.repeated) == (2, "Failed", False)
    assert (other.new_instance_id, other.new_execution_id) == ("order-api-2b", 1)
    result = live.client.wait_for_orchestration("order-api", WAIT_MS)
    assert (result.status, result.output) == ("Completed", "charged 1111")
    result = live.client.wait_for_orchestration("order-api-2b", WAIT_MS)
    assert (result.status, result.output) == ("Completed", "charged 3333")
    assert executions(live, "order-api") == [(1, "Failed"), (2, "Completed")]
    assert [r.input for r in records(live, "order-api-2b")] == ['"3333"']


def test_a_running_instance_is_refused_in_one_line_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], live: LiveHub
) -> None:
    live.client.start_orchestration("held-1", "Hold", None)
    live.client.wait_for_status_change("held-1", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    capsys.readouterr()
    code = main(["restart", "held-1", "--yes", "--url", live.operator.url, "--schema", live.schema])
    _, err = capsys.readouterr()
    said = [line for line in err.splitlines() if "--url carries a password" not in line]
    assert code == 1
    assert said == [
        "taskhub-pg: instance held-1 is running, not ended: cancel it first, or restart it"
        " once it has ended"
    ]
    with Client.connect(live.url, live.schema) as client, pytest.raises(InstanceRunning):
        client.restart("held-1")
    assert records(live, "held-1") == []
    assert executions(live, "held-1") == [(1, "Running")]
    live.client.raise_event("held-1", "Release", "done")
    assert live.client.wait_for_orchestration("held-1", WAIT_MS).status == "Completed"


def test_the_defect_the_released_runtime_drops_a_start_of_an_ended_instance(
    live: LiveHub,
) -> None:
    """What an application had to do before: start the same id again. The
    runtime sees the ended history and drops the start: the order stays
    failed (a new id was the only way, with no record)."""
    failed_order(live, "order-old-way", "7777")
    with psycopg.connect(live.url, autocommit=True) as conn:
        item = {
            "StartOrchestration": {
                "instance": "order-old-way",
                "orchestration": "Order",
                "input": '"7777"',
                "version": "1.0.0",
                "parent_instance": None,
                "parent_id": None,
                "execution_id": 1,
            }
        }
        conn.execute(
            f'SELECT "{live.schema}".enqueue_orchestrator_work(%s, %s, now())',
            ["order-old-way", json.dumps(item)],
        )

        def dropped() -> bool:
            row = conn.execute(
                f'SELECT count(*) FROM "{live.schema}".orchestrator_queue WHERE instance_id = %s',
                ["order-old-way"],
            ).fetchone()
            return row == (0,)

        wait_until(dropped, timeout_s=WAIT_MS / 1000, interval_s=0.02)
    assert live.client.get_status("order-old-way").status == "Failed"
    assert executions(live, "order-old-way") == [(1, "Failed")]


# -- from the dashboard ---------------------------------------------------------

USERS = {"olga": ("operator", "olga's secret"), "vera": ("viewer", "vera's secret")}


@pytest.fixture
def dashboard(live: LiveHub) -> Iterator[TestClient]:
    """The dashboard as the operator role, actions on, signed in per request."""
    lines = "\n".join(hash_line(name, role, secret) for name, (role, secret) in USERS.items())
    access = AccessPolicy(accounts=read_accounts(lines, "the test's users"))
    app = dashboard_app(live.operator.url, live.schema, allow_actions=True, access=access)
    with TestClient(app, base_url=LOCAL) as client:
        yield client


def signed_in(client: TestClient, user: str) -> TestClient:
    client.headers.update(basic(user, USERS[user][1]))
    return client


def test_the_dashboard_offers_restart_on_an_ended_instance_and_restarts_it_both_ways(
    dashboard: TestClient, live: LiveHub
) -> None:
    failed_order(live, "order-web", "8888")
    failed_order(live, "order-web-2", "9999")
    olga = signed_in(dashboard, "olga")
    page = olga.get("/instances/order-web").text
    assert 'data-action="restart"' in page and 'data-action="delete"' in page
    assert 'data-action="cancel"' not in page  # ended: nothing to cancel
    done = act(
        olga,
        "restart",
        {"instance_id": "order-web", "execution_id": "1", "reason": "vendor back"},
        "/instances/order-web",
    )
    assert "order-web restarted as its execution 2" in unescape(done)
    done = act(
        olga,
        "restart",
        {"instance_id": "order-web-2", "new_instance_id": "order-web-2b"},
        "/instances/order-web-2",
    )
    assert "order-web-2 restarted as order-web-2b" in unescape(done)
    for instance_id, output in (("order-web", "charged 8888"), ("order-web-2b", "charged 9999")):
        result = live.client.wait_for_orchestration(instance_id, WAIT_MS)
        assert (result.status, result.output) == ("Completed", output)
    [record] = records(live, "order-web")
    assert (record.from_status, record.reason) == ("Failed", "vendor back")
    assert record.restarted_by == live.operator.name
    # Both pages show the record, each linking to the other.
    shown = olga.get("/instances/order-web-2b").text
    assert 'id="restarts"' in shown and "/instances/order-web-2" in shown


def test_a_viewer_sees_no_restart_and_its_post_is_refused(
    dashboard: TestClient, live: LiveHub
) -> None:
    failed_order(live, "order-view", "6666")
    vera = signed_in(dashboard, "vera")
    assert 'data-action="restart"' not in vera.get("/instances/order-view").text
    vera.cookies.set("taskhub_csrf", "x.y")
    refused = vera.post(
        "/actions/restart",
        data={"instance_id": "order-view", "csrf_token": "x.y", "confirmation": "x"},
    )
    assert refused.status_code == 403 and "vera may only read" in refused.text
    assert records(live, "order-view") == []
    assert executions(live, "order-view") == [(1, "Failed")]


def test_a_running_instance_offers_cancel_with_a_reason_not_restart(
    dashboard: TestClient, live: LiveHub
) -> None:
    live.client.start_orchestration("held-web", "Hold", None)
    live.client.wait_for_status_change("held-web", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    olga = signed_in(dashboard, "olga")
    page = olga.get("/instances/held-web").text
    assert 'data-action="restart"' not in page
    cancel = page.split('data-action="cancel"')[1].split("</form>")[0]
    assert 'name="reason"' in cancel
    done = act(
        olga,
        "cancel",
        {"instance_id": "held-web", "reason": "customer called"},
        "/instances/held-web",
    )
    assert "asked to cancel" in done
    result = live.client.wait_for_orchestration("held-web", WAIT_MS)
    assert result.status == "Failed" and "customer called" in str(result.error)
