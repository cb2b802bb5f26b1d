"""One schedule cannot stop the others (issue 54). On 3c77916 a schedule
whose every fire failed (an input over 8 MB) made Scheduler.run_once stop at
it, pass after pass: no schedule of the hub fired again. Now each schedule
fires on its own, a failure is caught, logged and counted, and after
schedule_pause_after_failures in a row the schedule is paused, with the
reason in `taskhub-pg schedule list` and on the dashboard. Failures are
planted by SQL, the way a row the fire cannot use gets there; the scheduler
runs on a test clock."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from provider import Client, Scheduler
from provider.cli import main
from provider.dashboard.app import dashboard_app
from provider.errors import is_retryable_sqlstate
from tests.support.dashboard import LOCAL

T0 = datetime(2026, 12, 5, 9, 0, 0, tzinfo=UTC)
# An input the start cannot carry: a JSON string over 8 MB.
HUGE_INPUT = "'\"' || repeat('x', 9 * 1024 * 1024) || '\"'"


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def step(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def client(hub_schema: str, database_url: str) -> Iterator[Client]:
    with Client.connect(database_url, hub_schema, statement_timeout_ms=30_000) as made:
        yield made


@pytest.fixture
def plant(sql: psycopg.Connection[Any], hub_schema: str) -> Callable[[str, str, str], None]:
    """Set a column of a schedule by SQL, past every check set_schedule makes."""

    def set_column(name: str, column: str, expression: str) -> None:
        sql.execute(
            f'UPDATE "{hub_schema}".taskhub_schedules SET {column} = {expression} WHERE name = %s',
            [name],
        )

    return set_column


def started(sql: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = sql.execute(
        f'SELECT instance_id FROM "{schema}".orchestrator_queue ORDER BY instance_id'
    ).fetchall()
    return [row[0] for row in rows]


def every_10_s(client: Client, *names: str) -> None:
    for name in names:
        client.set_schedule(name, "Report", {"n": 1}, every_s=10, now=T0)


def by_name(client: Client) -> dict[str, Any]:
    return {schedule.name: schedule for schedule in client.list_schedules()}


def test_a_schedule_planted_to_fail_does_not_keep_the_others_from_firing_in_one_pass(
    client: Client,
    plant: Callable[[str, str, str], None],
    sql: psycopg.Connection[Any],
    hub_schema: str,
) -> None:
    every_10_s(client, "a-first", "b-broken", "c-last")
    plant("b-broken", "input", HUGE_INPUT)
    scheduler = Scheduler(client, clock=FakeClock(T0 + timedelta(seconds=25)))
    fired = scheduler.run_once()
    assert sorted(f.instance_id for f in fired) == [
        "schedule:a-first:2026-12-05T09:00:10Z",
        "schedule:a-first:2026-12-05T09:00:20Z",
        "schedule:c-last:2026-12-05T09:00:10Z",
        "schedule:c-last:2026-12-05T09:00:20Z",
    ]
    assert started(sql, hub_schema) == sorted(f.instance_id for f in fired)
    assert (scheduler.stats.started, scheduler.stats.failed) == (4, 1)
    broken = by_name(client)["b-broken"]
    assert broken.failures == 1 and not broken.paused
    assert broken.last_error is not None and "54000" in broken.last_error
    # Its tick stays due: the next pass tries it again.
    assert broken.ticks_until == T0 and broken.last_tick_at is None


def test_one_statement_firing_every_schedule_keeps_the_others_starts(
    client: Client,
    plant: Callable[[str, str, str], None],
    sql: psycopg.Connection[Any],
    hub_schema: str,
) -> None:
    """The firing is the hub's: a caller that fires several schedules in one
    transaction (a statement here, as pg_cron would) loses none of the
    others' starts to the one that fails; each start is a subtransaction.
    taskhub_fire_schedule, the call of 0027's scheduler, is isolated alike."""
    every_10_s(client, "a-first", "b-broken", "c-last")
    plant("b-broken", "input", HUGE_INPUT)
    tick = T0 + timedelta(seconds=10)
    with sql.transaction():
        rows = sql.execute(
            f"SELECT s.name, f.out_taken, f.out_failure IS NOT NULL"
            f'  FROM "{hub_schema}".taskhub_schedules AS s,'
            f'       LATERAL "{hub_schema}".taskhub_fire_schedule_outcome(s.name, %s, true) AS f'
            f" ORDER BY s.name",
            [tick],
        ).fetchall()
    assert rows == [("a-first", True, False), ("b-broken", False, True), ("c-last", True, False)]
    assert started(sql, hub_schema) == [
        "schedule:a-first:2026-12-05T09:00:10Z",
        "schedule:c-last:2026-12-05T09:00:10Z",
    ]
    later = tick + timedelta(seconds=10)
    with sql.transaction():
        taken = sql.execute(
            f'SELECT s.name, "{hub_schema}".taskhub_fire_schedule(s.name, %s, true)'
            f'  FROM "{hub_schema}".taskhub_schedules AS s ORDER BY s.name',
            [later],
        ).fetchall()
    assert taken == [("a-first", True), ("b-broken", False), ("c-last", True)]
    assert by_name(client)["b-broken"].failures == 2


def test_after_n_failures_in_a_row_the_schedule_is_paused_with_its_reason_shown(
    client: Client,
    plant: Callable[[str, str, str], None],
    sql: psycopg.Connection[Any],
    hub_schema: str,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sql.execute(
        f"UPDATE \"{hub_schema}\".taskhub_settings SET value = '3'"
        " WHERE name = 'schedule_pause_after_failures'"
    )
    every_10_s(client, "broken", "healthy")
    plant("broken", "input", HUGE_INPUT)
    clock = FakeClock(T0 + timedelta(seconds=5))
    scheduler = Scheduler(client, clock=clock)
    for _ in range(3):
        clock.step(10)
        assert [f.schedule for f in scheduler.run_once()] == ["healthy"]
    broken = by_name(client)["broken"]
    assert broken.paused and broken.failures == 3
    assert broken.paused_reason is not None
    assert broken.paused_reason.startswith(
        "failed 3 times in a row (schedule_pause_after_failures); the latest: tick"
    )
    assert "54000 p_work_item is larger than 8388608 bytes" in broken.paused_reason
    assert (scheduler.stats.failed, scheduler.stats.paused) == (3, 1)
    # Paused, it is passed over: no more failures, the others fire on.
    clock.step(10)
    assert [f.schedule for f in scheduler.run_once()] == ["healthy"]
    assert by_name(client)["broken"].failures == 3

    # The reason, where operators look: the command line ...
    capsys.readouterr()
    assert main(["schedule", "list", "--url", database_url, "--schema", hub_schema]) == 0
    table = capsys.readouterr().out
    assert "failed 3 times in a row" in table
    # yes / no, as the dashboard says it (issue 58: it printed True / False).
    assert "True" not in table and "False" not in table and " yes " in table
    assert main(["schedule", "list", "--json", "--url", database_url, "--schema", hub_schema]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["broken"]["paused_reason"] == broken.paused_reason
    assert listed["broken"]["failures"] == 3 and listed["healthy"]["failures"] == 0
    # ... and the dashboard's schedules page.
    with TestClient(dashboard_app(database_url, hub_schema), base_url=LOCAL) as dashboard:
        html = unescape(dashboard.get("/schedules").text)
    rows = dict(re.findall(r'<tr data-schedule="([^"]+)">(.*?)</tr>', html, re.S))
    assert '<td class="n" data-field="failures">3</td>' in rows["broken"]
    assert f'<td data-field="why">{broken.paused_reason}</td>' in rows["broken"]
    assert '<td data-field="why"></td>' in rows["healthy"]


def test_a_success_resets_the_count(
    client: Client,
    plant: Callable[[str, str, str], None],
    sql: psycopg.Connection[Any],
    hub_schema: str,
) -> None:
    every_10_s(client, "flaky")
    plant("flaky", "input", HUGE_INPUT)
    clock = FakeClock(T0 + timedelta(seconds=15))
    scheduler = Scheduler(client, clock=clock)
    for _ in range(2):
        assert scheduler.run_once() == []
        clock.step(1)
    assert by_name(client)["flaky"].failures == 2
    plant("flaky", "input", "'{\"n\": 2}'")  # mended by hand: no set_schedule, no resume
    assert [f.instance_id for f in scheduler.run_once()] == ["schedule:flaky:2026-12-05T09:00:10Z"]
    flaky = by_name(client)["flaky"]
    assert (flaky.failures, flaky.last_error, flaky.paused) == (0, None, False)
    # A change and a resume set it back too.
    plant("flaky", "input", HUGE_INPUT)
    clock.step(10)
    scheduler.run_once()
    assert by_name(client)["flaky"].failures == 1
    client.set_schedule("flaky", "Report", {"n": 3}, every_s=10, now=T0)
    assert by_name(client)["flaky"].failures == 0


def test_resuming_a_paused_schedule_forgets_its_failures(
    client: Client,
    plant: Callable[[str, str, str], None],
    sql: psycopg.Connection[Any],
    hub_schema: str,
) -> None:
    sql.execute(
        f"UPDATE \"{hub_schema}\".taskhub_settings SET value = '1'"
        " WHERE name = 'schedule_pause_after_failures'"
    )
    every_10_s(client, "once-broken")
    plant("once-broken", "input", HUGE_INPUT)
    clock = FakeClock(T0 + timedelta(seconds=15))
    Scheduler(client, clock=clock).run_once()
    assert by_name(client)["once-broken"].paused
    plant("once-broken", "input", "'null'")
    client.resume_schedule("once-broken", now=clock.now)
    resumed = by_name(client)["once-broken"]
    assert (resumed.paused, resumed.failures, resumed.last_error, resumed.paused_reason) == (
        False,
        0,
        None,
        None,
    )


def test_ticks_the_scheduler_cannot_work_out_are_counted_against_their_schedule(
    client: Client,
    plant: Callable[[str, str, str], None],
    sql: psycopg.Connection[Any],
    hub_schema: str,
) -> None:
    """A cron expression or a time zone planted past set_schedule's checks
    fails in the scheduler, not in the hub: the scheduler counts it."""
    sql.execute(
        f"UPDATE \"{hub_schema}\".taskhub_settings SET value = '2'"
        " WHERE name = 'schedule_pause_after_failures'"
    )
    client.set_schedule("bad-cron", "Report", cron="0 * * * *", now=T0)
    client.set_schedule("bad-zone", "Report", cron="0 * * * *", time_zone="Europe/Paris", now=T0)
    every_10_s(client, "healthy")
    plant("bad-cron", "cron", "'61 * * * *'")
    plant("bad-zone", "time_zone", "'Mars/Olympus'")
    clock = FakeClock(T0 + timedelta(seconds=15))
    scheduler = Scheduler(client, clock=clock)
    for _ in range(2):
        assert [f.schedule for f in scheduler.run_once()] == ["healthy"]
        clock.step(10)
    schedules = by_name(client)
    for name in ("bad-cron", "bad-zone"):
        assert schedules[name].paused and schedules[name].failures == 2
        assert "its ticks cannot be worked out" in (schedules[name].paused_reason or "")
    assert "Mars/Olympus" in (schedules["bad-zone"].last_error or "")


def test_a_passing_failure_is_raised_and_counts_against_no_schedule(
    client: Client, hub_schema: str, database_url: str
) -> None:
    """A start that waits out its lock_timeout (55P03) meets the server's
    passing condition, not the schedule's: the fire raises it, nothing is
    counted, and the tick stays due."""
    every_10_s(client, "waits")
    instance = "schedule:waits:2026-12-05T09:00:10Z"
    with (
        psycopg.connect(database_url, autocommit=True) as holder,
        psycopg.connect(database_url, autocommit=True, options="-c lock_timeout=50") as caller,
        holder.transaction(),
    ):
        # The start's own lock of its stripe of ids, held by another session.
        holder.execute(
            f'SELECT pg_advisory_xact_lock("{hub_schema}".taskhub_start_stripe_key(%s))',
            [instance],
        )
        with pytest.raises(psycopg.errors.LockNotAvailable):
            caller.execute(
                f'SELECT * FROM "{hub_schema}".taskhub_fire_schedule_outcome(%s, %s, true)',
                ["waits", T0 + timedelta(seconds=10)],
            )
    waits = by_name(client)["waits"]
    assert (waits.failures, waits.last_error, waits.ticks_until) == (0, None, T0)


@pytest.mark.parametrize("value", ["0", "-1", "five", ""])
def test_a_pause_setting_out_of_range_is_read_as_5_and_named_by_check(
    client: Client, sql: psycopg.Connection[Any], hub_schema: str, value: str
) -> None:
    """The setting has no check of its own (a check would lock taskhub_settings
    ahead of taskhub_schedules in the upgrade): a value that is not a whole
    number of at least 1 counts as the default, and `taskhub-pg check` says so."""
    sql.execute(
        f'UPDATE "{hub_schema}".taskhub_settings SET value = %s'
        " WHERE name = 'schedule_pause_after_failures'",
        [value],
    )
    every_10_s(client, "counted")
    paused = [client.count_schedule_failure("counted", f"failure {n}") for n in range(1, 6)]
    assert paused == [False, False, False, False, True]
    drift = sql.execute(
        f'SELECT problem, object, detail FROM "{hub_schema}".taskhub_check_drift()'
        " WHERE problem = 'setting'"
    ).fetchall()
    assert drift == [
        (
            "setting",
            "taskhub_settings schedule_pause_after_failures",
            f"'{value}' is not a whole number of at least 1: read as 5",
        )
    ]


@pytest.mark.parametrize(
    "sqlstate",
    [
        "08006",
        "40001",
        "40P01",
        "53100",
        "55P03",
        "57014",
        "57P01",
        "58030",
        "0A000",
        "25006",
        "26000",
        "42P05",
        "22023",
        "54000",
        "23505",
        "P0002",
        "42883",
        "XX000",
        "40002",
    ],
)
def test_the_hub_and_the_provider_agree_on_what_is_passing(
    sql: psycopg.Connection[Any], hub_schema: str, sqlstate: str
) -> None:
    row = sql.execute(
        f'SELECT "{hub_schema}".taskhub_transient_sqlstate(%s)', [sqlstate]
    ).fetchone()
    assert row is not None and row[0] is is_retryable_sqlstate(sqlstate)
