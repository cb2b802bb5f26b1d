"""Server time of each dashboard page on a large hub: 100,000 instances and
1,000,000 history rows by default (the issue's mark: 200 ms a page).

    python -m bench.dashboard_pages [--instances N] [--events-per-instance M] [--rounds R]

The hub is filled with SQL (instances of three statuses over the last 30
days, their executions and histories, queued messages, dead letters), then
each page is asked for `rounds` times in-process (Starlette's TestClient: no
network, the time is the app's and the database's). It prints the median and
the worst per page, against the mark.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from starlette.testclient import TestClient

from bench.sides import database_url, drop_schema, fresh_schema
from devkit.workloads.flavours import TASKHUB
from provider.dashboard.app import dashboard_app

MARK_MS = 200.0


def seed(conn: psycopg.Connection[Any], schema: str, instances: int, events: int) -> None:
    """Instances 1..N: 80 % Completed, 15 % Running, 5 % Failed, created over
    the last 30 days; `events` history rows each; a message queued for every
    hundredth, a dead letter for every thousandth."""
    q = f'"{schema}"'
    n = int(instances)
    conn.execute(
        f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
        " current_execution_id, created_at, updated_at)"
        " SELECT 'order-' || g, CASE WHEN g %% 3 = 0 THEN 'Refund' ELSE 'Checkout' END, '1.0.0',"
        "        1, now() - (g * interval '30 days' / %(n)s),"
        "        now() - (g * interval '30 days' / %(n)s) + interval '2 seconds'"
        "   FROM generate_series(1, %(n)s) AS g",
        {"n": n},
    )
    conn.execute(
        f"INSERT INTO {q}.executions (instance_id, execution_id, status, output, started_at,"
        " completed_at)"
        " SELECT 'order-' || g, 1,"
        "        CASE WHEN g %% 20 = 0 THEN 'Failed' WHEN g %% 20 < 4 THEN 'Running'"
        "             ELSE 'Completed' END,"
        "        '\"done\"', now() - (g * interval '30 days' / %(n)s),"
        "        CASE WHEN g %% 20 BETWEEN 1 AND 3 THEN NULL"
        "             ELSE now() - (g * interval '30 days' / %(n)s) + interval '2 seconds' END"
        "   FROM generate_series(1, %(n)s) AS g",
        {"n": n},
    )
    conn.execute(
        f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
        " created_at)"
        " SELECT 'order-' || g, 1, e, 'Event',"
        "        json_build_object('event_id', e, 'type', 'ActivityCompleted', 'name', 'Charge',"
        "                          'result', repeat('r', 40)),"
        "        now() - (g * interval '30 days' / %(n)s) + e * interval '10 milliseconds'"
        "   FROM generate_series(1, %(n)s) AS g, generate_series(1, %(events)s) AS e",
        {"n": n, "events": int(events)},
    )
    conn.execute(
        f"SELECT {q}.enqueue_orchestrator_work('order-' || g,"
        " json_build_object('ExternalRaised', json_build_object('instance', 'order-' || g,"
        " 'name', 'Go', 'data', '{}'))::text, now())"
        " FROM generate_series(1, %(n)s, 100) AS g",
        {"n": n},
    )
    conn.execute(
        f"INSERT INTO {q}.dead_letters (source_queue, original_id, instance_id, work_item,"
        " attempt_count, reason, original_created_at)"
        " SELECT 'orchestrator', g, 'order-' || g, '{}', 11, 'delivered 11 times', now()"
        "   FROM generate_series(1, %(n)s, 1000) AS g",
        {"n": n},
    )
    conn.execute(f"ANALYZE {q}.instances, {q}.executions, {q}.history, {q}.orchestrator_queue")


def pages(instances: int) -> dict[str, str]:
    middle = f"order-{instances // 2}"
    week_ago = datetime.now(UTC) - timedelta(days=7)
    return {
        "overview": "/",
        "overview panel": "/panels/overview",
        "instances": "/instances",
        "instances, Failed": "/instances?status=Failed",
        "instances, by name": "/instances?name=Refund",
        "instances, a deep page": f"/instances?after={middle}",
        "instances, last week": f"/instances?started_after={week_ago:%Y-%m-%dT%H:%M}",
        "one instance": f"/instances/{middle}",
        "dead letters": "/dead-letters",
    }


def measure(client: TestClient, path: str, rounds: int) -> list[float]:
    client.get(path)  # warm: plans, pool
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        answer = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (path, answer.status_code)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a server to use (default: DATABASE_URL, else embedded)")
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--events-per-instance", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    schema = fresh_schema(url, TASKHUB)
    try:
        started = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as conn:
            seed(conn, schema, args.instances, args.events_per_instance)
        print(
            f"hub {schema}: {args.instances:,} instances,"
            f" {args.instances * args.events_per_instance:,} history rows"
            f" (filled in {time.perf_counter() - started:.0f} s)"
        )
        print(f"{'page':<26} {'median ms':>10} {'worst ms':>10}  mark {MARK_MS:.0f} ms")
        with TestClient(dashboard_app(url, schema), base_url="http://127.0.0.1") as client:
            for name, path in pages(args.instances).items():
                times = measure(client, path, args.rounds)
                median = statistics.median(times)
                verdict = "MET" if max(times) <= MARK_MS else "NOT MET"
                print(f"{name:<26} {median:>10.1f} {max(times):>10.1f}  {verdict}")
    finally:
        drop_schema(url, schema)
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
