"""Flow control binds the released runtime too: its own activity
dispatchers and a Python worker fetch through the same fetch_work_item, so a
fleet limit on an activity holds over both, and a paused activity runs in
neither until it is resumed. duroxide 0.2.2 has no flow control: there the
limit cannot even be set."""

from __future__ import annotations

import threading
import time
from typing import Any

import duroxide

from provider import ActivityContext, ActivityWorker, Client, TaskHub

FANOUT = 40
LIMIT = 3
RUN_S = 0.05


class Running:
    """How many handlers run at once, wherever they run, and which ran."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.ran: list[int] = []
        # Set: the handlers wait for it before they return.
        self.gate: threading.Event | None = None

    def run(self, number: int) -> int:
        if self.gate is not None:
            self.gate.wait(30)
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(RUN_S)  # the work itself: a call to a slow vendor
        with self._lock:
            self.now -= 1
            self.ran.append(number)
        return number


def _runtime(database_url: str, schema: str, running: Running) -> Any:
    provider = duroxide.PostgresProvider.connect_with_schema(database_url, schema)
    runtime = duroxide.Runtime(
        provider,
        duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10, worker_concurrency=4),
    )

    @runtime.register_activity("Charge")
    def charge_in_duroxide(ctx: Any, number: int) -> int:
        return running.run(number)

    @runtime.register_orchestration("Checkout")
    def checkout(ctx: Any, count: int) -> Any:
        charges = [ctx.schedule_activity("Charge", n) for n in range(count)]
        results = yield ctx.all(charges)
        return sorted(result["ok"] for result in results)

    return provider, runtime


def _python_worker(hub: TaskHub, running: Running) -> ActivityWorker:
    worker = ActivityWorker(hub, concurrency=4, idle_poll_ms=5, max_idle_poll_ms=10)

    @worker.activity("Charge")
    def charge_in_python(ctx: ActivityContext, number: int) -> int:
        return running.run(number)

    return worker


def test_a_fleet_limit_holds_over_the_released_runtime_and_a_python_worker(
    database_url: str, hub_schema: str, hub: TaskHub
) -> None:
    running = Running()
    with Client.connect(database_url, hub_schema) as client:
        client.set_activity_limit("Charge", LIMIT, reason="the vendor allows 3 at once")
    provider, runtime = _runtime(database_url, hub_schema, running)
    runtime.start()
    try:
        with _python_worker(hub, running) as worker:
            client_dx = duroxide.Client(provider)
            client_dx.start_orchestration("checkout-1", "Checkout", FANOUT)
            result = client_dx.wait_for_orchestration("checkout-1", 60_000)
    finally:
        runtime.shutdown(timeout_ms=2_000)

    assert result.status == "Completed", result.error
    assert result.output == list(range(FANOUT))
    assert sorted(running.ran) == list(range(FANOUT)), "an item lost or run twice"
    assert 1 <= running.peak <= LIMIT
    # Both sides took part, each held to the one limit.
    assert 0 < worker.stats.completed < FANOUT


def test_a_paused_activity_runs_nowhere_until_it_is_resumed(
    database_url: str, hub_schema: str, hub: TaskHub, sql: Any
) -> None:
    running = Running()
    with Client.connect(database_url, hub_schema) as client:
        client.pause_activity("Charge", reason="vendor down")
        provider, runtime = _runtime(database_url, hub_schema, running)
        runtime.start()
        try:
            with _python_worker(hub, running):
                client_dx = duroxide.Client(provider)
                client_dx.start_orchestration("checkout-2", "Checkout", 6)
                # Every Charge queued, and the fleet polling: none is handed out.
                deadline = time.monotonic() + 30
                while _queued(sql, hub_schema) < 6:
                    assert time.monotonic() < deadline, "the orchestration never scheduled"
                    time.sleep(0.02)
                idle_until = time.monotonic() + 1.0
                while time.monotonic() < idle_until:
                    assert running.ran == [] and _leased(sql, hub_schema) == 0
                    time.sleep(0.05)
                assert client.resume_activity("Charge") is True
                result = client_dx.wait_for_orchestration("checkout-2", 60_000)
        finally:
            runtime.shutdown(timeout_ms=2_000)
    assert result.status == "Completed", result.error
    assert sorted(running.ran) == list(range(6))


def _queued(sql: Any, schema: str) -> int:
    row = sql.execute(f'SELECT count(*) FROM "{schema}".worker_queue').fetchone()
    return int(row[0])


def _leased(sql: Any, schema: str) -> int:
    row = sql.execute(
        f'SELECT count(*) FROM "{schema}".worker_queue WHERE lock_token IS NOT NULL'
    ).fetchone()
    return int(row[0])


def test_a_paused_orchestration_takes_no_step_on_the_released_runtime_and_others_run(
    database_url: str, hub_schema: str, hub: TaskHub, sql: Any
) -> None:
    """Paused once its first turn has queued its charges: the charges still
    run (a pause by orchestration holds its turns), their completions wait
    in the queue, another orchestration completes meanwhile, and the resume
    lets the checkout finish."""
    running = Running()
    running.gate = threading.Event()  # no charge ends before the pause
    with Client.connect(database_url, hub_schema) as client:
        provider, runtime = _runtime(database_url, hub_schema, running)

        @runtime.register_orchestration("Ping")
        def ping(ctx: Any, value: int) -> Any:
            return value
            yield  # a generator, as the runtime expects

        runtime.start()
        try:
            client_dx = duroxide.Client(provider)
            client_dx.start_orchestration("checkout-3", "Checkout", 6)
            deadline = time.monotonic() + 30
            while _queued(sql, hub_schema) < 6:
                assert time.monotonic() < deadline, "the orchestration never scheduled"
                time.sleep(0.02)
            client.pause_orchestration("Checkout", reason="month end")
            running.gate.set()
            while len(running.ran) < 6:
                assert time.monotonic() < deadline, "the charges did not run"
                time.sleep(0.02)
            client_dx.start_orchestration("ping-1", "Ping", 7)
            pinged = client_dx.wait_for_orchestration("ping-1", 30_000)
            assert pinged.status == "Completed", pinged.error
            idle_until = time.monotonic() + 1.0
            while time.monotonic() < idle_until:
                assert _waiting_turns(sql, hub_schema, "checkout-3") > 0
                time.sleep(0.05)
            assert client_dx.get_status("checkout-3").status == "Running"
            assert client.resume_orchestration("Checkout") is True
            result = client_dx.wait_for_orchestration("checkout-3", 60_000)
        finally:
            runtime.shutdown(timeout_ms=2_000)
    assert result.status == "Completed", result.error
    assert result.output == list(range(6))


def _waiting_turns(sql: Any, schema: str, instance: str) -> int:
    """The instance's messages queued and not leased."""
    row = sql.execute(
        f'SELECT count(*) FROM "{schema}".orchestrator_queue'
        " WHERE instance_id = %s AND lock_token IS NULL",
        [instance],
    ).fetchone()
    return int(row[0])
