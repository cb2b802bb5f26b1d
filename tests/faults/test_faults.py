"""Faults: the server restarts, connections die, worker processes are killed,
the disk fills up. Work completes, no message is lost, none is acked twice,
and transient failures surface as RetryableError."""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.waiting import wait_until
from devkit.workloads.work_items import (
    activity_execute,
    event,
    external_raised,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import (
    ActivityContext,
    ActivityWorker,
    LockLost,
    RetryableError,
    TaskHub,
    TaskHubError,
)
from provider.testing.embedded_pg import EmbeddedPostgres
from tests.support.db import orchestrator_items as completions
from tests.support.paths import REPO
from tests.support.worker_process import RUNS_TABLE

HubFactory = Callable[..., TaskHub]
# What a check of the database meets while the server restarts: "not yet".
RESTARTING = (psycopg.OperationalError,)


def test_postgres_restart_mid_workload_loses_nothing_and_acks_nothing_twice(
    embedded_cluster: EmbeddedPostgres | None,
    hub_schema: str,
    make_hub: HubFactory,
    database_url: str,
) -> None:
    if embedded_cluster is None:
        pytest.skip("needs the test session's own PostgreSQL to restart it")
    hub = make_hub(hub_schema, worker_lock_timeout_ms=2_000, pool_timeout_s=2)
    total = 200
    for n in range(total):
        hub.enqueue_worker_work(activity_execute("restart", n, name="Step"))
    worker = ActivityWorker(hub, concurrency=4, idle_poll_ms=10, max_error_backoff_ms=500)

    @worker.activity("Step")
    def step(ctx: ActivityContext, _: Any) -> int:
        time.sleep(0.01)  # stands for work: the restart lands while items run
        return ctx.activity_id

    def done() -> int:
        with psycopg.connect(database_url, autocommit=True) as conn:
            return len(completions(conn, hub_schema))

    with worker:
        wait_until(
            lambda: done() >= total // 4,
            timeout_s=30,
            interval_s=0.05,
            message="a quarter of the work done",
            ignoring=RESTARTING,
        )
        embedded_cluster.restart()
        wait_until(
            lambda: done() >= total,
            timeout_s=60,
            interval_s=0.05,
            message="all of the work done after the restart",
            ignoring=RESTARTING,
        )

    with psycopg.connect(database_url, autocommit=True) as conn:
        ids = [c["ActivityCompleted"]["id"] for c in completions(conn, hub_schema)]
        left = conn.execute(f'SELECT count(*) FROM "{hub_schema}".worker_queue').fetchone()
    assert sorted(ids) == list(range(total))  # each exactly once: nothing lost, nothing twice
    assert left == (0,)


def test_dispatchers_whose_connections_are_killed_mid_turn_still_finish_every_instance(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    instances, turns = 20, 4
    hub = make_hub(
        hub_schema,
        orchestration_lock_timeout_ms=1_000,
        application_name="doomed-dispatcher",
        pool_max_size=8,
    )
    for n in range(instances):
        hub.enqueue_orchestrator_work(f"turns-{n}", start_orchestration(f"turns-{n}"))
    stop = threading.Event()
    errors: list[str] = []

    def dispatcher() -> None:
        while not stop.is_set():
            try:
                item = hub.fetch_orchestration_item()
                if item is None:
                    time.sleep(0.01)  # this dispatcher's idle poll
                    continue
                position = len(item.history) + 1
                events = (
                    [orchestration_started(item.instance_id)]
                    if position == 1
                    else [
                        event(position, item.instance_id, "ExternalEvent", name="Next", data="{}")
                    ]
                )
                follow_up = [external_raised(item.instance_id, "Next")] if position < turns else []
                hub.ack_orchestration_item(
                    item.lock_token,
                    1,
                    history_delta=events,
                    orchestrator_items=follow_up,
                    metadata=metadata(),
                )
            except LockLost:
                pass  # our lease expired while our connection was being killed
            except RetryableError:
                time.sleep(0.02)  # back off, then retry: a killed connection is transient
            except TaskHubError as error:
                errors.append(str(error))

    def killer() -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            while not stop.wait(0.15):
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = 'doomed-dispatcher' AND state = 'active'"
                )

    threads = [threading.Thread(target=dispatcher) for _ in range(4)]
    threads.append(threading.Thread(target=killer))
    for thread in threads:
        thread.start()

    def all_finished() -> bool:
        with psycopg.connect(database_url, autocommit=True) as conn:
            row = conn.execute(
                f'SELECT count(*) FROM "{hub_schema}".history WHERE event_id = %s', [turns]
            ).fetchone()
            return row == (instances,)

    try:
        wait_until(all_finished, timeout_s=90, interval_s=0.05, ignoring=RESTARTING)
    finally:
        stop.set()
        for thread in threads:
            thread.join()

    assert errors == []
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            f'SELECT instance_id, array_agg(event_id ORDER BY event_id) FROM "{hub_schema}".history'
            " GROUP BY 1"
        ).fetchall()
    assert len(rows) == instances
    assert all(events == list(range(1, turns + 1)) for _, events in rows)


@pytest.mark.slow
def test_workers_killed_at_random_for_half_a_minute_every_orchestration_completes(
    hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    # At least 15 kills: on a slow or busy machine the load runs longer (up to
    # twice load_s) rather than the test getting weaker.
    load_s, lock_ms, min_kills = 30.0, 1_000, 15
    sql.execute(RUNS_TABLE.format(schema=hub_schema))
    dx_provider = duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema)
    runtime = duroxide.Runtime(dx_provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=20))

    @runtime.register_orchestration("Pipeline")
    def pipeline(ctx: Any, seconds: float) -> Any:
        results = []
        for _ in range(3):
            result = yield ctx.schedule_activity("Sleep", seconds).with_tag("python")
            results.append(result)
        return results

    workers: list[subprocess.Popen[str]] = []
    serving: set[int] = set()  # pids that printed "ready"
    killed_pids: set[int] = set()

    def start_worker() -> subprocess.Popen[str]:
        """A worker process; a thread of its own notes when it serves, so
        that the kill loop never waits for a replacement's start (on a busy
        machine that took seconds, and the loop made half its kills)."""
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.worker_process",
                database_url,
                hub_schema,
                str(lock_ms),
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )

        def note_ready() -> None:
            assert process.stdout is not None
            if process.stdout.readline().strip() == "ready":
                serving.add(process.pid)

        threading.Thread(target=note_ready, daemon=True).start()
        workers.append(process)
        return process

    runtime.start()
    client = duroxide.Client(dx_provider)
    rng = random.Random(11)
    started: list[str] = []
    kills = 0
    try:
        first = [start_worker() for _ in range(3)]
        wait_until(
            lambda: all(process.pid in serving for process in first),
            timeout_s=60,
            message="the first three workers to serve",
        )
        deadline, last_call = time.monotonic() + load_s, time.monotonic() + 2 * load_s
        next_kill = time.monotonic() + rng.uniform(0.6, 1.6)
        while time.monotonic() < deadline or (kills < min_kills and time.monotonic() < last_call):
            instance = f"pipeline-{len(started)}"
            client.start_orchestration(instance, "Pipeline", rng.choice([0.05, 0.2, 0.5]))
            started.append(instance)
            time.sleep(0.25)  # paces the starts: the load runs for load_s
            if time.monotonic() >= next_kill:
                # A process that serves: killing one still starting proves nothing.
                # And never the last one: where replacements start slower than
                # the kills come (a loaded machine), one survivor would take
                # every kill, and an activity its tenth.
                live = [w for w in workers if w.pid in serving and w.poll() is None]
                if len(live) >= 2:
                    victim = rng.choice(live)
                    victim.kill()  # SIGKILL, mid-activity or not
                    victim.wait()
                    killed_pids.add(victim.pid)
                    kills += 1
                    start_worker()
                next_kill = time.monotonic() + rng.uniform(0.6, 1.6)
        results = {i: client.wait_for_orchestration(i, 90_000) for i in started}
    finally:
        runtime.shutdown(timeout_ms=2_000)
        for process in workers:
            if process.poll() is None:
                process.kill()
            process.wait()

    print(f"{len(started)} orchestrations, {kills} worker processes killed")
    assert kills >= min_kills
    assert all(result.status == "Completed" for result in results.values()), [
        (i, r.status, r.error) for i, r in results.items() if r.status != "Completed"
    ]
    # An activity ran again only when the worker running it was killed (its
    # lease was lost): every run but the last of an activity was in a killed process.
    rows = sql.execute(
        f"SELECT instance_id, activity_id, array_agg(pid ORDER BY started_ms)"
        f' FROM "{hub_schema}".activity_runs GROUP BY 1, 2'
    ).fetchall()
    reruns = [(instance, pids) for instance, _, pids in rows if len(pids) > 1]
    assert all(set(pids[:-1]) <= killed_pids for _, pids in reruns), reruns


@pytest.fixture
def tiny_disk() -> Iterator[Path]:
    mount_point = Path("/tmp/taskhub-tiny-disk")
    mount_point.mkdir(exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        if os.geteuid() == 0:
            shutil.chown(mount_point, "postgres", "postgres")
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_a_full_disk_surfaces_as_a_retryable_error_and_keeps_earlier_work(
    tiny_disk: Path, hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    tablespace = f"tiny_{hub_schema}"
    sql.execute(f"CREATE TABLESPACE {tablespace} LOCATION '{tiny_disk}'")
    try:
        sql.execute(f'ALTER TABLE "{hub_schema}".worker_queue SET TABLESPACE {tablespace}')
        hub = make_hub(hub_schema)
        stored = 0
        with pytest.raises(RetryableError) as full:
            for n in range(200):
                item = activity_execute("disk", n)
                # Incompressible, so that it really takes its size on disk.
                item["ActivityExecute"]["input"] = json.dumps(
                    base64.b64encode(os.urandom(150_000)).decode()
                )
                hub.enqueue_worker_work(item)
                stored += 1
        assert full.value.sqlstate == "53100"  # disk_full
        assert stored > 0
        row = sql.execute(f'SELECT count(*) FROM "{hub_schema}".worker_queue').fetchone()
        assert row == (stored,)
    finally:
        # Nothing may stay in the tablespace once its disk goes away.
        sql.execute(f'DROP SCHEMA "{hub_schema}" CASCADE')
        sql.execute(f"DROP TABLESPACE {tablespace}")
