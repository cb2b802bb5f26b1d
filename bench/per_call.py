"""Single-client measurements of the hot path: one fetch of a hot instance
alone (and the floor, a plain string_agg read of the same rows), and the
server time per call of fetch and ack on both queues (pg_stat_user_functions).
Contract SQL only."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import psycopg
from psycopg.types.string import TextLoader

from bench.grid_workload import seed_light_instances
from scripts.workloads.contention import ContentionSettings, seed_hot_instances
from scripts.workloads.measure import now_ms

HOT_ALONE = ContentionSettings(hot_instances=1, history_events=2_000, event_payload_bytes=2_000)
CALLS = 1_000
MEASURED = ("fetch_orchestration_item", "ack_orchestration_item", "fetch_work_item", "ack_worker")


def _median_ms(conn: psycopg.Connection[Any], sql: str, args: list[Any], times: int) -> float:
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        conn.execute(sql, args).fetchall()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def hot_fetch_alone(url: str, schema: str, times: int = 9) -> dict[str, float]:
    """One fetch of an instance with 2,000 events of 2 KB, the whole row received
    (as text), against reading the same rows with string_agg."""
    q = f'"{schema}"'
    with psycopg.connect(url, autocommit=True) as conn:
        conn.adapters.register_loader("jsonb", TextLoader)
        seed_hot_instances(conn, schema, HOT_ALONE)
        conn.execute(f"ANALYZE {q}.history")
        samples = []
        for _ in range(times):
            started = time.perf_counter()
            row = conn.execute(
                f"SELECT out_lock_token, out_history FROM {q}.fetch_orchestration_item(%s, 60000)",
                [now_ms()],
            ).fetchone()
            samples.append((time.perf_counter() - started) * 1000)
            assert row is not None
            conn.execute(
                f"SELECT {q}.abandon_orchestration_item(%s, %s, 0, true)", [row[0], now_ms()]
            )
        floor = _median_ms(
            conn,
            f"SELECT '[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']'"
            f" FROM {q}.history AS h WHERE h.instance_id = 'hot-00' AND h.execution_id = 1",
            [],
            times,
        )
    return {"fetch_ms": statistics.median(samples), "string_agg_floor_ms": floor}


def _function_totals(conn: psycopg.Connection[Any], schema: str) -> dict[str, tuple[int, float]]:
    rows = conn.execute(
        "SELECT funcname, calls, total_time FROM pg_stat_user_functions WHERE schemaname = %s",
        [schema],
    ).fetchall()
    return {name: (int(calls), float(total)) for name, calls, total in rows}


def _timed(round_trips: dict[str, list[float]], name: str, started: float) -> None:
    round_trips.setdefault(name, []).append((time.perf_counter() - started) * 1e6)


def server_time_per_call(url: str, schema: str) -> dict[str, float]:
    """Microseconds per call, one client running light turns, then worker
    items: server time (pg_stat_user_functions, total time), and the median
    round trip seen by the client, commit included ("<name> round trip"):
    the window in which a fault catches a call in flight."""
    q = f'"{schema}"'
    completion = json.dumps(
        {"ActivityCompleted": {"instance": "w", "execution_id": 1, "id": 1, "result": "1"}}
    )
    with psycopg.connect(url, autocommit=True) as conn:
        seed_light_instances(conn, schema, 200)
        conn.execute(f"ANALYZE {q}.history, {q}.orchestrator_queue, {q}.instances")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET track_functions = 'all'")
        before = _function_totals(conn, schema)
        round_trips: dict[str, list[float]] = {}
        for _ in range(CALLS):
            started = time.perf_counter()
            row = conn.execute(
                "SELECT out_instance_id, out_lock_token, out_execution_id,"
                f" jsonb_array_length(out_history) FROM {q}.fetch_orchestration_item(%s, 30000)",
                [now_ms()],
            ).fetchone()
            _timed(round_trips, "fetch_orchestration_item", started)
            assert row is not None
            instance, token, execution, events = row
            event = {
                "event_id": events + 1,
                "event_type": "Event",
                "event_data": json.dumps({"event_id": events + 1, "type": "ExternalEvent"}),
            }
            message = {"ExternalRaised": {"instance": instance, "name": "Go", "data": "{}"}}
            started = time.perf_counter()
            conn.execute(
                f"SELECT {q}.ack_orchestration_item(%s, %s, %s, %s, '[]', %s, '{{}}')",
                [token, now_ms(), execution, json.dumps([event]), json.dumps([message])],
            )
            _timed(round_trips, "ack_orchestration_item", started)
        for activity in range(CALLS):
            item = json.dumps(
                {
                    "ActivityExecute": {
                        "instance": "w",
                        "execution_id": 1,
                        "id": activity,
                        "name": "A",
                        "input": "1",
                    }
                }
            )
            conn.execute(
                f"SELECT {q}.enqueue_worker_work(%s, %s, 'w', 1, %s, NULL, NULL)",
                [item, now_ms(), activity],
            )
            started = time.perf_counter()
            row = conn.execute(
                f"SELECT out_lock_token FROM {q}.fetch_work_item(%s, 30000)", [now_ms()]
            ).fetchone()
            _timed(round_trips, "fetch_work_item", started)
            assert row is not None
            started = time.perf_counter()
            conn.execute(f"SELECT {q}.ack_worker(%s, 'w', %s, %s)", [row[0], completion, now_ms()])
            _timed(round_trips, "ack_worker", started)
        conn.execute("SELECT pg_stat_force_next_flush()")
        conn.execute("SELECT 1")
    time.sleep(0.5)
    with psycopg.connect(url, autocommit=True) as conn:
        after = _function_totals(conn, schema)
    figures = {}
    for name in MEASURED:
        calls = after[name][0] - before.get(name, (0, 0.0))[0]
        total_ms = after[name][1] - before.get(name, (0, 0.0))[1]
        figures[name] = 1000 * total_ms / calls if calls else 0.0
    for name in MEASURED:
        figures[f"{name} round trip"] = statistics.median(round_trips[name])
    return figures


def main() -> None:
    """`make bench-per-call`: the per-call figures of our schema, side by side
    with duroxide 0.2.2 (and any other flavour named), alternating the order;
    medians of the rounds."""
    import argparse

    from bench.run import database_url, drop_schema, fresh_schema
    from scripts.workloads.flavours import ALL, DUROXIDE_0_2_2, TASKHUB

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--also", action="append", default=[], choices=sorted(ALL))
    parser.add_argument("--url", help="server URL (default: DATABASE_URL, else embedded)")
    args = parser.parse_args()
    flavours = [TASKHUB, *(ALL[name] for name in args.also), DUROXIDE_0_2_2]
    url, cluster = database_url(args.url)
    runs: dict[str, list[dict[str, float]]] = {flavour.name: [] for flavour in flavours}
    try:
        for round_number in range(args.rounds):
            order = flavours if round_number % 2 == 0 else flavours[::-1]
            for flavour in order:
                schema = fresh_schema(url, flavour)
                try:
                    runs[flavour.name].append(server_time_per_call(url, schema))
                finally:
                    drop_schema(url, schema)
    finally:
        if cluster is not None:
            cluster.stop()
    medians = {
        name: {key: statistics.median(run[key] for run in figures) for key in figures[0]}
        for name, figures in runs.items()
    }
    anchor = medians[DUROXIDE_0_2_2.name]
    print(f"microseconds per call, medians of {args.rounds} rounds (ratio to duroxide 0.2.2)")
    print(f"{'':38}" + "".join(f"{flavour.name:>22}" for flavour in flavours))
    for key in anchor:
        cells = "".join(
            f"{medians[f.name][key]:>13.1f} ({medians[f.name][key] / anchor[key]:.2f}x)"
            for f in flavours
        )
        print(f"{key:38}{cells}")


if __name__ == "__main__":
    main()
