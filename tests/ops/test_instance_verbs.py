"""Instances an operator can find and act on: `inspect instances` filters and
pages (instances known only by queued messages too), `inspect instance` and
`delete-instance` on such an instance, `cancel` and `raise-event` writing
what the duroxide client writes; the same on TaskHub and AsyncTaskHub."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import start_orchestration
from provider import AsyncTaskHub, InvalidInput, TaskHub
from provider.cli import main
from tests.support.failed_instance import DECLINED, failed_order
from tests.support.terminal import in_a_terminal
from tests.support.tracing_sdk import provider_traced_by_sdk
from tests.validation.harness import create_instance, finish_instance


def cli(capsys: pytest.CaptureFixture[str], url: str, schema: str, *argv: str) -> tuple[int, Any]:
    """Exit code and --json output (None when it printed none)."""
    capsys.readouterr()
    code = main([*argv, "--url", url, "--schema", schema, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip() else {"stderr": err}


def queued(sql: psycopg.Connection[Any], schema: str, instance_id: str) -> list[str]:
    rows = sql.execute(
        f'SELECT work_item FROM "{schema}".orchestrator_queue WHERE instance_id = %s ORDER BY id',
        [instance_id],
    ).fetchall()
    return [str(row[0]) for row in rows]


def hand_out(hub: TaskHub, times: int) -> None:
    """What a runtime without the orchestration does: take the turn, give it back."""
    for _ in range(times):
        item = hub.fetch_orchestration_item(30_000)
        assert item is not None
        hub.abandon_orchestration_item(item.lock_token)


@pytest.fixture
def populated(hub: TaskHub, hub_schema: str) -> str:
    """7 completed, 3 failed, 5 running, and one start no runtime took."""
    for n in range(7):
        finish_instance(hub, f"done-{n}", "Completed", '"ok"')
    for n in range(3):
        finish_instance(hub, f"broken-{n}", "Failed", '"boom"')
    for n in range(5):
        create_instance(hub, f"busy-{n}")
    hub.enqueue_for_orchestrator(start_orchestration("ghost", name="NotRegistered"))
    hand_out(hub, 3)
    return hub_schema


def test_inspect_instances_filters_by_status_name_and_time_and_pages(
    capsys: pytest.CaptureFixture[str], database_url: str, populated: str
) -> None:
    def ids(*argv: str) -> list[str]:
        code, out = cli(capsys, database_url, populated, "inspect", "instances", *argv)
        assert code == 0
        return [row["instance_id"] for row in out["instances"]]

    assert len(ids()) == 16
    assert sorted(ids("--status", "Failed")) == ["broken-0", "broken-1", "broken-2"]
    # Any case (issue 58: `--status failed` was refused).
    assert sorted(ids("--status", "failed")) == sorted(ids("--status", "FAILED"))
    assert ids("--status", "Pending") == ["ghost"]
    assert ids("--name", "NotRegistered") == ["ghost"]
    assert len(ids("--status", "Running")) == 5
    assert ids("--started-before", "1h") == []
    assert len(ids("--started-after", "1h")) == 16

    # Pages of 5, newest first, each after the last one of the previous page.
    seen: list[str] = []
    after: list[str] = []
    while True:
        code, out = cli(
            capsys, database_url, populated, "inspect", "instances", "--limit", "5", *after
        )
        assert code == 0
        seen += [row["instance_id"] for row in out["instances"]]
        if out["next_after"] is None:
            break
        after = ["--after", out["next_after"]]
    assert sorted(seen) == sorted(ids()) and len(set(seen)) == 16
    assert seen == ids()

    code, _ = cli(capsys, database_url, populated, "inspect", "instances", "--status", "Lost")
    assert code == 2


def test_inspect_instances_searches_by_id_prefix_and_a_part_of_the_name(
    capsys: pytest.CaptureFixture[str], database_url: str, populated: str
) -> None:
    def ids(*argv: str) -> list[str]:
        code, out = cli(capsys, database_url, populated, "inspect", "instances", *argv)
        assert code == 0, out
        return sorted(row["instance_id"] for row in out["instances"])

    assert ids("--id-prefix", "broken-") == ["broken-0", "broken-1", "broken-2"]
    assert ids("--name-contains", "notregist") == ["ghost"]
    assert ids("--id-prefix", "gh", "--name-contains", "Registered") == ["ghost"]
    assert ids("--id-prefix", "broken-", "--name-contains", "Registered") == []


def test_an_instances_table_fits_an_80_column_terminal(
    database_url: str, hub: TaskHub, hub_schema: str
) -> None:
    """Issue 40: long ids and names broke the table's lines. Each row stays
    one line of at most 80 columns, a long cell cut with an ellipsis."""
    long_id = "order-" + "7" * 90
    hub.enqueue_orchestrator_work(long_id, start_orchestration(long_id, "Process" + "Order" * 20))
    hub.enqueue_orchestrator_work("short-1", start_orchestration("short-1", "Ship"))
    env = {**os.environ, "DATABASE_URL": database_url, "TERM": "xterm", "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    written = in_a_terminal(
        [sys.executable, "-m", "provider", "inspect", "instances", "--schema", hub_schema],
        env,
        columns=80,
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", written.decode("utf-8"))  # bold headers
    lines = text.replace("\r", "").splitlines()
    assert lines and all(len(line) <= 80 for line in lines), "\n".join(lines)
    rows = [line for line in lines if "order-777" in line or "short-1" in line]
    assert len(rows) == 2, text  # one line each, never wrapped
    assert all("Pending" in row for row in rows), text  # the status kept whole
    assert "…" in rows[0] + rows[1]
    assert "left out to fit 80 columns:" in text and "(--json has them)" in text


def test_an_instance_known_only_by_its_messages_is_found_and_deleted(
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    populated: str,
    sql: psycopg.Connection[Any],
) -> None:
    code, report = cli(capsys, database_url, populated, "inspect", "instance", "ghost")
    assert code == 0
    ghost = report["instance"]
    assert (ghost["status"], ghost["orchestration_name"]) == ("Pending", "NotRegistered")
    assert ghost["max_attempt_count"] == 3 and ghost["queued_messages"] == 1
    assert "registered" in ghost["note"]
    assert [m["attempt_count"] for m in report["queued"]] == [3]

    code, deleted = cli(capsys, database_url, populated, "delete-instance", "ghost", "--yes")
    assert code == 0, deleted
    assert deleted["queue_messages_deleted"] == 1
    assert queued(sql, populated, "ghost") == []
    code, _ = cli(capsys, database_url, populated, "inspect", "instance", "ghost")
    assert code == 3


def test_cancel_and_raise_event_write_what_the_duroxide_client_writes(
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    populated: str,
    sql: psycopg.Connection[Any],
) -> None:
    code, _ = cli(capsys, database_url, populated, "cancel", "busy-0", "--yes", "--reason", "user")
    assert code == 0
    assert queued(sql, populated, "busy-0") == [
        '{"CancelInstance":{"instance":"busy-0","reason":"user"}}'
    ]
    code, _ = cli(capsys, database_url, populated, "raise-event", "busy-1", "Approve", '{"a": 1}')
    assert code == 0
    assert queued(sql, populated, "busy-1") == [
        '{"ExternalRaised":{"instance":"busy-1","name":"Approve","data":"{\\"a\\": 1}"}}'
    ]

    # Refusals change nothing: an ended instance, an unknown one, bad data, no tty.
    assert cli(capsys, database_url, populated, "cancel", "done-0", "--yes")[0] == 1
    assert cli(capsys, database_url, populated, "cancel", "nobody", "--yes")[0] == 3
    assert cli(capsys, database_url, populated, "raise-event", "nobody", "E")[0] == 3
    assert cli(capsys, database_url, populated, "raise-event", "busy-2", "E", "not json")[0] == 2
    assert cli(capsys, database_url, populated, "cancel", "busy-3")[0] == 5
    for instance in ("done-0", "busy-2", "busy-3"):
        assert queued(sql, populated, instance) == []


def test_both_faces_find_and_cancel_with_one_plan(
    hub: TaskHub, populated: str, make_hub: Callable[..., TaskHub], database_url: str
) -> None:
    found = hub.find_instances(status="Pending")
    assert [(i.instance_id, i.status, i.max_attempt_count) for i in found] == [
        ("ghost", "Pending", 3)
    ]
    assert [i.instance_id for i in hub.find_instances(orchestration_name="NotRegistered")] == [
        "ghost"
    ]
    with pytest.raises(InvalidInput, match="find_instances: status"):
        hub.find_instances(status="Lost")

    async def from_asyncio() -> list[str]:
        async with AsyncTaskHub.connect(database_url, populated) as async_hub:
            await async_hub.cancel_instance("busy-4", "from asyncio")
            page = await async_hub.find_instances(status="Failed", limit=2)
            return [i.instance_id for i in page]

    assert len(asyncio.run(from_asyncio())) == 2
    turn = hub.fetch_orchestration_item(30_000)
    while turn is not None and turn.instance_id != "busy-4":
        hub.abandon_orchestration_item(turn.lock_token)
        turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    assert turn.messages == [{"CancelInstance": {"instance": "busy-4", "reason": "from asyncio"}}]


def test_the_items_are_the_ones_the_duroxide_client_writes(
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    populated: str,
    sql: psycopg.Connection[Any],
) -> None:
    """The released client and our verbs, side by side on one schema."""
    import duroxide

    client = duroxide.Client(duroxide.PostgresProvider.connect_with_schema(database_url, populated))
    client.cancel_instance("busy-0", "user")
    client.raise_event("busy-0", "Approve", {"by": "ops"})
    assert (
        cli(capsys, database_url, populated, "cancel", "busy-1", "--yes", "--reason", "user")[0]
        == 0
    )
    event = ["raise-event", "busy-1", "Approve", '{"by": "ops"}']
    assert cli(capsys, database_url, populated, *event)[0] == 0
    theirs = [item.replace("busy-0", "busy-1") for item in queued(sql, populated, "busy-0")]
    assert queued(sql, populated, "busy-1") == theirs


def test_a_traced_operators_cancel_and_event_carry_its_trace_context(
    capsys: pytest.CaptureFixture[str],
    database_url: str,
    populated: str,
    sql: psycopg.Connection[Any],
) -> None:
    """As TaskHub's raise_event does: the instance's work continues the
    caller's W3C trace (taskhub_raise_event and taskhub_cancel_instance record
    its context with the instance)."""
    with (
        provider_traced_by_sdk() as (provider, _),
        provider.get_tracer("incident-script").start_as_current_span("incident 42") as span,
    ):
        assert cli(capsys, database_url, populated, "raise-event", "busy-0", "Go")[0] == 0
        assert cli(capsys, database_url, populated, "cancel", "busy-1", "--yes")[0] == 0
    trace_id = f"{span.get_span_context().trace_id:032x}"
    rows = sql.execute(
        f"SELECT instance_id, split_part(traceparent, '-', 2)"
        f' FROM "{populated}".taskhub_trace_contexts ORDER BY instance_id'
    ).fetchall()
    assert rows == [("busy-0", trace_id), ("busy-1", trace_id)]


def test_prune_works_the_backlog_off_in_batches_saying_how_far_it_got(
    capsys: pytest.CaptureFixture[str], database_url: str, populated: str
) -> None:
    """10 ended roots, 5 running: batches of 3 until --limit, then until none is left."""

    def prune(*argv: str) -> tuple[int, str, list[str]]:
        capsys.readouterr()
        where = ["--url", database_url, "--schema", populated]
        code = main(["prune", "--completed-before", "0s", "--yes", *argv, *where])
        out, err = capsys.readouterr()
        return code, out.strip(), err.splitlines()

    code, out, progress = prune("--limit", "4", "--batch-size", "3")
    assert code == 0
    assert [line.split(" roots so far")[0] for line in progress] == ["batch 1: 3", "batch 2: 4"]
    assert all(line.endswith("roots/s") for line in progress)
    assert out == (
        "instances deleted 4, executions deleted 4, events deleted 4,"
        " queue messages deleted 0, roots deleted 4"
    )

    code, out, progress = prune("--batch-size", "3", "--json")  # no limit: until none is left
    assert code == 0
    batches = [json.loads(line) for line in progress]
    assert [(b["batch"], b["roots_deleted"]) for b in batches] == [(1, 3), (2, 6)]
    assert all(b["roots_per_s"] > 0 for b in batches)
    assert json.loads(out) == {
        "instances_deleted": 6,
        "executions_deleted": 6,
        "events_deleted": 6,
        "queue_messages_deleted": 0,
        "roots_deleted": 6,
    }
    found = cli(capsys, database_url, populated, "inspect", "instances")[1]["instances"]
    assert sorted(row["instance_id"] for row in found) == [  # the running ones stay
        *(f"busy-{n}" for n in range(5)),
        "ghost",
    ]

    code, out, progress = prune()
    assert (code, out, progress) == (0, "instances deleted 0", [])  # nothing left to ask about


def test_prune_waits_for_a_busy_hub_and_stops_when_it_stays_busy(
    capsys: pytest.CaptureFixture[str], database_url: str, hub: TaskHub, hub_schema: str
) -> None:
    """A message that has waited 10 s for a dispatcher: the hub is behind, so
    a prune with --busy-lag 1000 deletes nothing, stops, and says why in one
    line (exit 0: a cron job's next run goes on); without the check it prunes."""
    finish_instance(hub, "ended", "Completed", '"ok"')
    behind = datetime.now(UTC) - timedelta(seconds=10)
    hub.enqueue_orchestrator_work("waiting", start_orchestration("waiting"), visible_at=behind)

    def prune(*argv: str) -> tuple[int, Any, list[str]]:
        capsys.readouterr()
        where = ["--url", database_url, "--schema", hub_schema, "--json"]
        code = main(["prune", "--completed-before", "0s", "--yes", *argv, *where])
        out, err = capsys.readouterr()
        return code, json.loads(out), err.splitlines()

    code, out, err = prune("--busy-lag", "1000", "--busy-wait", "0")
    assert code == 0
    assert out["stopped"] == "hub busy" and out["instances_deleted"] == 0
    assert len(err) == 1 and err[0].startswith("stopped: hub busy (dispatch lag 1")
    assert "above 1000 ms for 0 s" in err[0]

    code, out, err = prune("--busy-lag", "0")
    assert code == 0 and "stopped" not in out and out["roots_deleted"] == 1


def test_inspect_instance_says_why_it_failed_in_full(
    capsys: pytest.CaptureFixture[str], database_url: str, hub: TaskHub, hub_schema: str
) -> None:
    """Issue 40: "why did it fail?" in one step: the error, whole, and the
    activity that failed with how often it was scheduled; --json carries it."""
    failed_order(hub, "order-1")
    code, report = cli(capsys, database_url, hub_schema, "inspect", "instance", "order-1")
    assert code == 0, report
    failure = report["failure"]
    declined = DECLINED
    assert failure["execution_id"] == 1 and failure["error"] == declined
    assert failure["details"]["Application"]["message"] == declined
    assert [(s["kind"], s["name"], s["attempts"]) for s in failure["failed_steps"]] == [
        ("ActivityFailed", "Charge", 2),
        ("ActivityFailed", "Charge", 2),
    ]
    capsys.readouterr()
    where = ["--url", database_url, "--schema", hub_schema]
    assert main(["inspect", "instance", "order-1", *where]) == 0
    words = " ".join(capsys.readouterr().out.split())  # however the terminal wraps it
    assert " ".join(f"error: {declined}".split()) in words
    assert "ActivityFailed Charge (scheduled 2 times): card declined" in words

    # A running instance has no failure.
    create_instance(hub, "running-1")
    assert (
        cli(capsys, database_url, hub_schema, "inspect", "instance", "running-1")[1]["failure"]
        is None
    )
