"""Schedules: each tick started exactly once, whatever the number of
schedulers, late ticks after downtime by the schedule's policy, a clock that
jumps back starting nothing twice; managed from Python and the CLI."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from devkit.roles import operator_of
from provider import Client, InvalidInput, PermanentError, ScheduleNotFound, Scheduler
from provider.cli import main
from provider.client.schedule_ticks import Ticks

T0 = datetime(2026, 12, 5, 9, 0, 0, tzinfo=UTC)


class FakeClock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clients(hub_schema: str, database_url: str) -> Iterator[Callable[[], Client]]:
    made: list[Client] = []

    def make() -> Client:
        client = Client.connect(database_url, hub_schema, statement_timeout_ms=10_000)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


def started(sql: psycopg.Connection[Any], schema: str, name: str) -> list[str]:
    """The instance ids of every start of schedule `name` queued, once each or not."""
    rows = sql.execute(
        f'SELECT instance_id FROM "{schema}".orchestrator_queue'
        " WHERE instance_id LIKE %s ORDER BY instance_id",
        [f"schedule:{name}:%"],
    ).fetchall()
    return [row[0] for row in rows]


def set_every(client: Client, name: str, every_s: int, now: datetime, **options: Any) -> None:
    plan = client.plans.set_schedule(name, "Report", {"n": 1}, every_s=every_s, now=now, **options)
    client.run(plan)


# -- ticks: time arithmetic alone ---------------------------------------------


def test_interval_ticks_are_multiples_of_the_interval_since_the_epoch() -> None:
    ticks = Ticks(every_s=15, cron=None)
    moment = T0 + timedelta(seconds=7)
    assert ticks.latest_at_or_before(moment) == T0
    assert ticks.between(T0 - timedelta(seconds=1), T0 + timedelta(seconds=31), limit=10) == [
        T0,
        T0 + timedelta(seconds=15),
        T0 + timedelta(seconds=30),
    ]
    assert len(ticks.between(T0, T0 + timedelta(hours=1), limit=5)) == 5  # the latest five


def test_cron_ticks_are_read_in_the_schedules_time_zone() -> None:
    # 06:00 in Paris is 05:00 UTC in December.
    ticks = Ticks(every_s=None, cron="0 6 * * *", zone="Europe/Paris")
    assert next(iter(ticks.after(T0))) == datetime(2026, 12, 6, 5, 0, tzinfo=UTC)
    assert ticks.latest_at_or_before(T0) == datetime(2026, 12, 5, 5, 0, tzinfo=UTC)
    exact = datetime(2026, 12, 5, 5, 0, tzinfo=UTC)
    assert ticks.latest_at_or_before(exact) == exact


# -- managing schedules -------------------------------------------------------


def test_a_schedule_is_set_listed_paused_resumed_and_removed(
    clients: Callable[[], Client],
) -> None:
    client = clients()
    assert client.set_schedule("nightly", "Report", {"kind": "daily"}, cron="0 2 * * *") is True
    assert client.set_schedule("nightly", "Report", None, cron="30 2 * * *") is False  # changed
    [nightly] = client.list_schedules()
    assert (nightly.name, nightly.cron, nightly.input, nightly.paused) == (
        "nightly",
        "30 2 * * *",
        "null",
        False,
    )
    assert client.pause_schedule("nightly") is False
    assert client.list_schedules()[0].paused
    assert client.resume_schedule("nightly") is True
    client.remove_schedule("nightly")
    assert client.list_schedules() == []
    with pytest.raises(ScheduleNotFound):
        client.pause_schedule("nightly")
    with pytest.raises(ScheduleNotFound):
        client.remove_schedule("nightly")


@pytest.mark.parametrize(
    "options",
    [
        {"cron": "61 * * * *"},
        {"cron": "* * * * *", "every_s": 5},
        {},
        {"every_s": 0},
        {"every_s": 5, "time_zone": "Mars/Olympus"},
        {"every_s": 5, "missed": "later"},
    ],
)
def test_a_bad_schedule_is_refused_and_nothing_is_stored(
    clients: Callable[[], Client], options: dict[str, Any]
) -> None:
    client = clients()
    with pytest.raises(InvalidInput):
        client.set_schedule("bad", "Report", **options)
    assert client.list_schedules() == []


# -- the scheduler, on a test clock -------------------------------------------


def test_each_tick_is_started_once_and_a_second_pass_starts_nothing(
    clients: Callable[[], Client], hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    client = clients()
    set_every(client, "every10", 10, T0)
    clock = FakeClock(T0 + timedelta(seconds=35))
    scheduler = Scheduler(client, clock=clock)
    fired = scheduler.run_once()
    assert [f.instance_id for f in fired] == [
        "schedule:every10:2026-12-05T09:00:10Z",
        "schedule:every10:2026-12-05T09:00:20Z",
        "schedule:every10:2026-12-05T09:00:30Z",
    ]
    assert scheduler.run_once() == []
    assert started(sql, hub_schema, "every10") == [f.instance_id for f in fired]
    # The start carries the schedule's orchestration and input.
    item = sql.execute(
        f'SELECT work_item FROM "{hub_schema}".orchestrator_queue WHERE instance_id = %s',
        [fired[0].instance_id],
    ).fetchone()
    assert item is not None
    start = json.loads(item[0])["StartOrchestration"]
    assert (start["orchestration"], json.loads(start["input"])) == ("Report", {"n": 1})


def test_racing_schedulers_start_each_tick_once(
    clients: Callable[[], Client], hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    set_every(clients(), "race", 1, T0)
    clock = FakeClock(T0)
    schedulers = [Scheduler(clients(), clock=clock) for _ in range(3)]
    taken: list[str] = []
    for second in range(1, 21):
        clock.now = T0 + timedelta(seconds=second, milliseconds=500)
        barrier = threading.Barrier(len(schedulers))

        def run(scheduler: Scheduler, barrier: threading.Barrier) -> None:
            barrier.wait()
            taken.extend(f.instance_id for f in scheduler.run_once())

        threads = [threading.Thread(target=run, args=(s, barrier)) for s in schedulers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    ids = started(sql, hub_schema, "race")
    assert len(ids) == 20 and len(set(ids)) == 20
    assert sorted(taken) == ids


@pytest.mark.parametrize(("missed", "late_started"), [("skip", 0), ("once", 1)])
def test_after_downtime_late_ticks_follow_the_policy(
    clients: Callable[[], Client],
    hub_schema: str,
    sql: psycopg.Connection[Any],
    missed: str,
    late_started: int,
) -> None:
    client = clients()
    set_every(client, "late", 60, T0, missed=missed)
    # The schedulers were down for an hour: the clock jumps ahead.
    clock = FakeClock(T0 + timedelta(hours=1, seconds=30))
    fired = Scheduler(client, clock=clock, grace_s=60).run_once()
    late = [f for f in fired if f.tick < clock.now - timedelta(seconds=60)]
    recent = [f for f in fired if f not in late]
    assert [f.started for f in late] == [bool(late_started)]
    # 10:00:00 is within the minute's grace: started whatever the policy.
    assert [f.instance_id for f in recent] == ["schedule:late:2026-12-05T10:00:00Z"]
    assert len(started(sql, hub_schema, "late")) == 1 + late_started


def test_a_clock_that_jumps_back_starts_nothing_twice(
    clients: Callable[[], Client], hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    client = clients()
    set_every(client, "back", 10, T0)
    clock = FakeClock(T0 + timedelta(seconds=25))
    scheduler = Scheduler(client, clock=clock)
    assert len(scheduler.run_once()) == 2
    clock.now = T0 + timedelta(seconds=5)  # the clock steps back 20 s
    assert scheduler.run_once() == []
    clock.now = T0 + timedelta(seconds=31)
    assert [f.instance_id for f in scheduler.run_once()] == ["schedule:back:2026-12-05T09:00:30Z"]
    assert len(started(sql, hub_schema, "back")) == 3


def test_a_paused_schedule_starts_nothing_and_resumes_from_now(
    clients: Callable[[], Client], hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    client = clients()
    set_every(client, "paused", 10, T0)
    client.run(client.plans.pause_schedule("paused", now=T0))
    clock = FakeClock(T0 + timedelta(seconds=45))
    scheduler = Scheduler(client, clock=clock)
    assert scheduler.run_once() == []
    client.run(client.plans.resume_schedule("paused", now=clock.now))
    assert scheduler.run_once() == []  # 10 s .. 40 s fell while it was paused
    clock.now = T0 + timedelta(seconds=52)
    assert [f.instance_id for f in scheduler.run_once()] == ["schedule:paused:2026-12-05T09:00:50Z"]


@pytest.mark.slow
def test_every_second_with_three_schedulers_for_a_minute(
    clients: Callable[[], Client], hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """On the real clock: 60 starts (give or take the one at each end), none twice."""
    clients().set_schedule("every-second", "Tick", every_s=1)
    schedulers = [Scheduler(clients(), poll_s=0.2) for _ in range(3)]
    for scheduler in schedulers:
        scheduler.start()
    began = time.monotonic()
    try:
        time.sleep(60)  # the test is the passing of a real minute
    finally:
        for scheduler in schedulers:
            scheduler.stop()
    elapsed = time.monotonic() - began
    ids = started(sql, hub_schema, "every-second")
    assert len(ids) == len(set(ids))
    assert abs(len(ids) - elapsed) <= 1.5, (len(ids), elapsed)


# -- the command line ----------------------------------------------------------


def test_the_schedule_verbs(
    capsys: pytest.CaptureFixture[str], database_url: str, hub_schema: str
) -> None:
    def cli(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*argv, "--url", database_url, "--schema", hub_schema])
        out, err = capsys.readouterr()
        return code, out, err

    assert (
        cli("schedule", "add", "hourly", "Report", "--cron", "0 * * * *", "--input", '{"a": 1}')[0]
        == 0
    )
    code, out, _ = cli("schedule", "list", "--json")
    assert code == 0 and [s["name"] for s in json.loads(out)] == ["hourly"]
    assert cli("schedule", "pause", "hourly")[0] == 0
    assert cli("schedule", "resume", "hourly")[0] == 0
    assert cli("schedule", "add", "bad", "Report", "--cron", "nonsense")[0] == 2
    assert cli("schedule", "remove", "hourly")[0] == 0
    code, _, err = cli("schedule", "remove", "hourly")
    assert code == 3 and "schedule hourly not found" in err


def test_an_operator_pauses_and_lists_schedules_but_cannot_create_one(
    clients: Callable[[], Client], database_url: str, hub_schema: str
) -> None:
    """Creating a schedule would let an operator start orchestrations of its
    choice, which nothing an operator may call can do (docs/ops.md)."""
    clients().set_schedule("nightly", "Report", cron="0 2 * * *")
    with (
        operator_of(database_url, hub_schema) as role,
        Client.connect(role.url, hub_schema) as operator,
    ):
        assert [s.name for s in operator.list_schedules()] == ["nightly"]
        operator.pause_schedule("nightly")
        operator.resume_schedule("nightly")
        with pytest.raises(PermanentError) as refused:
            operator.set_schedule("mine", "Anything", every_s=5)
        assert refused.value.sqlstate == "42501"
        operator.remove_schedule("nightly")
