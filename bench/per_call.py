"""Single-client measurements of the hot path: one fetch of a hot instance
alone (and the floor, a plain string_agg read of the same rows), and the
server time per call of fetch and ack on both queues (pg_stat_user_functions),
summed per light turn: an orchestration turn and an activity. Contract SQL only.

    python -m bench.per_call [--rounds N] [--quick] [--also FLAVOUR ...]
                             [--url URL | --pg-bin DIR | --major N]

`make bench-per-call`: our schema side by side with duroxide 0.2.2 (and any
flavour named with --also), alternating the order, medians of the rounds.
Results: a table and the targets of issue 23 on stdout, and
bench/results/per_call.json (every run, the medians, the verdicts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psycopg

from bench.function_stats import flushed_totals, function_totals, ms_per_call
from bench.grid_workload import seed_light_instances
from bench.server_choice import add_server_options, server_version, use_server_options
from bench.sides import alternating_runs, database_url, median_metrics
from bench.targets import (
    ANCHOR,
    Metrics,
    Target,
    hot_fetch_targets,
    light_turn_targets,
    print_ratio_table,
    print_targets,
    with_turns,
)
from devkit.workloads.contention import ContentionSettings, seed_hot_instances
from devkit.workloads.flavours import ALL, DUROXIDE_0_2_2, TASKHUB, Flavour
from devkit.workloads.measure import LAST_EVENT_SQL, now_ms, receive_history_as_text

RESULTS = Path(__file__).resolve().parent / "results"
HOT_ALONE = ContentionSettings(hot_instances=1, history_events=2_000, event_payload_bytes=2_000)
CALLS = 1_000
QUICK_CALLS = 200
LIGHT_INSTANCES = 200
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
    (as text): its round trip and its server time (pg_stat_user_functions, which
    leaves out printing the row), against reading the same rows with string_agg.
    Each fetch is followed by a floor read, so that a noisy moment on a shared
    machine slows both alike."""
    q = f'"{schema}"'
    fetch = f"SELECT out_lock_token, out_history FROM {q}.fetch_orchestration_item(%s, 60000)"
    with psycopg.connect(url, autocommit=True) as conn:
        receive_history_as_text(conn)
        seed_hot_instances(conn, schema, HOT_ALONE)
        conn.execute(f"ANALYZE {q}.history")
        floor = _floor_read(conn, q)
        conn.execute("SET track_functions = 'all'")
        before = function_totals(conn, schema)
        fetches, floors = [], []
        for _ in range(times):
            started = time.perf_counter()
            row = conn.execute(fetch, [now_ms()]).fetchone()
            fetches.append((time.perf_counter() - started) * 1000)
            assert row is not None
            conn.execute(
                f"SELECT {q}.abandon_orchestration_item(%s, %s, 0, true)", [row[0], now_ms()]
            )
            floors.append(_median_ms(conn, floor, [], 1))
        after = flushed_totals(url, conn, schema, before, {"fetch_orchestration_item": times})
    return {
        "fetch_ms": statistics.median(fetches),
        "fetch_server_ms": ms_per_call(before, after, "fetch_orchestration_item"),
        "string_agg_floor_ms": statistics.median(floors),
    }


def _floor_read(conn: psycopg.Connection[Any], q: str) -> str:
    """The floor: the hot instance's rows as text, concatenated in order. On a
    hub that stores its history as json, from a copy of them as text (with the
    same key and storage): string_agg takes text, and a cast of each row
    would put json's output function into the floor."""
    history = f"{q}.history"
    stored = conn.execute(
        "SELECT format_type(atttypid, NULL), attcompression FROM pg_attribute"
        " WHERE attrelid = %s::regclass AND attname = 'event_data'",
        [history],
    ).fetchone()
    if stored is not None and stored[0] == "json":
        conn.execute(f"DROP TABLE IF EXISTS {q}.floor_rows")
        conn.execute(f"CREATE TABLE {q}.floor_rows (LIKE {history} INCLUDING ALL)")
        conn.execute(f"ALTER TABLE {q}.floor_rows ALTER COLUMN event_data TYPE text")
        conn.execute(f"ALTER TABLE {q}.floor_rows ALTER COLUMN event_data SET STORAGE MAIN")
        if stored[1] == "l":  # lz4, as the history's
            conn.execute(f"ALTER TABLE {q}.floor_rows ALTER COLUMN event_data SET COMPRESSION lz4")
        conn.execute(
            f"INSERT INTO {q}.floor_rows SELECT * FROM {history}"
            " WHERE instance_id = 'hot-00' AND execution_id = 1"
        )
        conn.execute(f"ANALYZE {q}.floor_rows")
        history = f"{q}.floor_rows"
    return (
        f"SELECT '[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']'"
        f" FROM {history} AS h WHERE h.instance_id = 'hot-00' AND h.execution_id = 1"
    )


def _timed(round_trips: dict[str, list[float]], name: str, started: float) -> None:
    round_trips.setdefault(name, []).append((time.perf_counter() - started) * 1e6)


def orchestration_turns(
    conn: psycopg.Connection[Any],
    q: str,
    calls: int,
    round_trips: dict[str, list[float]],
    fetch: str = "fetch_orchestration_item",
    ack: str = "ack_orchestration_item",
) -> None:
    """Light turns: fetch, ack with one new event and one message to the same
    instance (`fetch` and `ack` name the procedures: bench.archive.sql_turn's twins)."""
    for _ in range(calls):
        started = time.perf_counter()
        row = conn.execute(
            f"SELECT out_instance_id, out_lock_token, out_execution_id FROM {q}.{fetch}(%s, 30000)",
            [now_ms()],
        ).fetchone()
        _timed(round_trips, fetch, started)
        assert row is not None
        instance, token, execution = row
        # Not timed; read from the history so as not to depend on out_history's type.
        last = conn.execute(LAST_EVENT_SQL.format(q=q), [instance, execution]).fetchone()
        events = last[0] if last and last[0] else 0
        event = {
            "event_id": events + 1,
            "event_type": "Event",
            "event_data": json.dumps({"event_id": events + 1, "type": "ExternalEvent"}),
        }
        message = {"ExternalRaised": {"instance": instance, "name": "Go", "data": "{}"}}
        started = time.perf_counter()
        conn.execute(
            f"SELECT {q}.{ack}(%s, %s, %s, %s, '[]', %s, '{{}}')",
            [token, now_ms(), execution, json.dumps([event]), json.dumps([message])],
        )
        _timed(round_trips, ack, started)


def _activities(
    conn: psycopg.Connection[Any], q: str, calls: int, round_trips: dict[str, list[float]]
) -> None:
    """Activities: enqueue one (not measured), fetch it, ack it with its completion."""
    completion = json.dumps(
        {"ActivityCompleted": {"instance": "w", "execution_id": 1, "id": 1, "result": "1"}}
    )
    for activity in range(calls):
        item = {"instance": "w", "execution_id": 1, "id": activity, "name": "A", "input": "1"}
        conn.execute(
            f"SELECT {q}.enqueue_worker_work(%s, %s, 'w', 1, %s, NULL, NULL)",
            [json.dumps({"ActivityExecute": item}), now_ms(), activity],
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


def seed_light_turns(url: str, schema: str) -> None:
    """LIGHT_INSTANCES light instances, each with a message waiting, and fresh statistics."""
    with psycopg.connect(url, autocommit=True) as conn:
        seed_light_instances(conn, schema, LIGHT_INSTANCES)
        q = f'"{schema}"'
        conn.execute(f"ANALYZE {q}.history, {q}.orchestrator_queue, {q}.instances")


def server_time_per_call(url: str, schema: str, calls: int = CALLS) -> dict[str, float]:
    """Microseconds per call, one client running light turns, then worker
    items: server time (pg_stat_user_functions, total time), summed per light
    turn, and the median round trip seen by the client, commit included
    ("<name> round trip"): the window in which a fault catches a call in flight."""
    q = f'"{schema}"'
    seed_light_turns(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET track_functions = 'all'")
        before = function_totals(conn, schema)
        round_trips: dict[str, list[float]] = {}
        orchestration_turns(conn, q, calls, round_trips)
        _activities(conn, q, calls, round_trips)
        after = flushed_totals(url, conn, schema, before, dict.fromkeys(MEASURED, calls))
    figures = {name: 1000 * ms_per_call(before, after, name) for name in MEASURED}
    figures = with_turns(figures)
    for name in MEASURED:
        figures[f"{name} round trip"] = statistics.median(round_trips[name])
    return figures


def flavours_with(also: list[str]) -> list[Flavour]:
    """Ours first, 0.2.2 last, the flavours named for comparison between (once each)."""
    extra = [ALL[name] for name in dict.fromkeys(also) if name not in (TASKHUB.name, ANCHOR)]
    return [TASKHUB, *extra, DUROXIDE_0_2_2]


def targets_of(
    per_call: dict[str, Metrics], alone: dict[str, Metrics], flavour: str
) -> list[Target]:
    return light_turn_targets(per_call, flavour) + hot_fetch_targets(alone, flavour)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds (medians), default 3")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CALLS} calls per round")
    parser.add_argument(
        "--also", action="append", default=[], choices=sorted(ALL), help="another flavour"
    )
    add_server_options(parser)
    args = parser.parse_args()
    chosen_url = use_server_options(args)
    flavours = flavours_with(args.also)
    calls = QUICK_CALLS if args.quick else CALLS
    url, cluster = database_url(chosen_url)
    started = time.perf_counter()
    try:
        server = server_version(url)
        # Each in its own alternating rounds: neither always follows the other.
        per_call_runs = alternating_runs(
            url, args.rounds, lambda u, s: server_time_per_call(u, s, calls), flavours
        )
        alone_runs = alternating_runs(url, args.rounds, hot_fetch_alone, flavours)
    finally:
        if cluster is not None:
            cluster.stop()
    per_call = {name: median_metrics(runs) for name, runs in per_call_runs.items()}
    alone = {name: median_metrics(runs) for name, runs in alone_runs.items()}
    rounds = f"medians of {args.rounds} rounds, ratio to duroxide 0.2.2"
    print(f"PostgreSQL {server}")
    print_ratio_table(f"microseconds per call, {calls} calls of each ({rounds})", per_call)
    print_ratio_table(f"hot fetch alone, 2,000 events of 2 KB, ms ({rounds})", alone)
    targets = {f.name: targets_of(per_call, alone, f.name) for f in flavours if f.name != ANCHOR}
    for name, judged in targets.items():
        print_targets(f"targets of issue 23, {name} against duroxide 0.2.2:", judged)
    document = {
        "server": server,
        "rounds": args.rounds,
        "calls": calls,
        "elapsed_s": time.perf_counter() - started,
        "flavours": [f.name for f in flavours],
        "server_us_per_call": {"medians": per_call, "runs": per_call_runs},
        "hot_fetch_alone": {"medians": alone, "runs": alone_runs},
        "targets": {name: [asdict(t) for t in judged] for name, judged in targets.items()},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "per_call.json").write_text(json.dumps(document, indent=2))
    print(f"\nresults in {RESULTS / 'per_call.json'} ({document['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
