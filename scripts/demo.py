"""`make run`: a task hub on a local Postgres, and its lease guarantees in figures.

1. Starts the development Postgres (or uses DATABASE_URL) and migrates schema
   `demo` to head with Alembic.
2. Seed reproduction A: a fetch whose caller clock is 10 s stale, 5 s lock.
3. A competing fetcher is mid-claim on the oldest instance: the next fetch
   takes another instance at once.
4. Seed reproduction B: 16 dispatchers on 4 hot instances with 2,000-event
   histories and a 1 s lock, side by side with a duroxide 0.2.2 schema.
5. Prints how to look at it all with psql.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from devkit import devdb
from devkit.workloads.contention import (
    ContentionResult,
    ContentionSettings,
    run_contention,
    seed_hot_instances,
)
from provider import ExecutionMetadata, TaskHub, now_ms
from provider.deploy import migrate

DEMO_DATABASE = "taskhub_demo"
SCHEMA = "taskhub_demo"
DUROXIDE_SCHEMA = "taskhub_demo_duroxide_0_2_2"


def start_message(instance: str) -> dict[str, object]:
    return {
        "StartOrchestration": {
            "instance": instance,
            "orchestration": "Demo",
            "input": "{}",
            "version": "1.0.0",
            "parent_instance": None,
            "parent_id": None,
            "execution_id": 1,
        }
    }


def demo_database_url() -> str:
    server = os.environ.get("DATABASE_URL") or devdb.start()
    if os.environ.get("DATABASE_URL"):
        return server
    with psycopg.connect(server, autocommit=True) as conn:
        if (
            conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DEMO_DATABASE]).fetchone()
            is None
        ):
            conn.execute(f'CREATE DATABASE "{DEMO_DATABASE}"')
    return urlunsplit(urlsplit(server)._replace(path=f"/{DEMO_DATABASE}"))


def fresh_schemas(url: str) -> bool:
    """Recreate `demo` with our migrations and, if duroxide is installed, its 0.2.2 twin."""
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in (SCHEMA, DUROXIDE_SCHEMA):
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    migrate.upgrade(url, SCHEMA)
    try:
        import duroxide
    except ImportError:
        return False
    duroxide.PostgresProvider.connect_with_schema(url, DUROXIDE_SCHEMA)
    return True


def stale_clock(hub: TaskHub, conn: psycopg.Connection[Any]) -> None:
    hub.enqueue_orchestrator_work(
        "stale-clock",
        start_message("stale-clock"),
        visible_at=datetime.now(UTC) - timedelta(seconds=60),
    )
    item = hub.fetch_orchestration_item(5_000, caller_now_ms=now_ms() - 10_000)
    assert item is not None
    row = conn.execute(
        f"SELECT locked_until - (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
        f" FROM {SCHEMA}.instance_locks WHERE lock_token = %s",
        [item.lock_token],
    ).fetchone()
    remaining = int(row[0]) if row else 0
    hub.ack_orchestration_item(
        item.lock_token,
        1,
        metadata=ExecutionMetadata(orchestration_name="Demo", orchestration_version="1.0.0"),
    )
    print("2. Stale caller clock (seed reproduction A): p_now_ms 10 s old, 5 s lock")
    print(f"   lease left when the row came back: {remaining} ms")
    print("   (a lease computed from the caller's clock would be about -5000 ms)")
    print("   ack: succeeded")


def contended_candidate(hub: TaskHub, url: str) -> None:
    for n, instance in enumerate(["oldest", "next"]):
        hub.enqueue_orchestrator_work(
            instance,
            start_message(instance),
            visible_at=datetime.now(UTC) - timedelta(seconds=10 - n),
        )
    with psycopg.connect(url) as competitor:
        competitor.execute(
            f"SELECT * FROM {SCHEMA}.fetch_orchestration_item(%s, 30000)", [now_ms()]
        )
        started = time.perf_counter()
        item = hub.fetch_orchestration_item(30_000)
        waited_ms = (time.perf_counter() - started) * 1000
        competitor.rollback()
    assert item is not None
    print("3. Another dispatcher is mid-claim on the oldest instance")
    print(f"   this fetch got {item.instance_id!r} after {waited_ms:.1f} ms, without waiting")
    hub.abandon_orchestration_item(item.lock_token)


def contention(url: str, with_duroxide: bool) -> None:
    settings = ContentionSettings()
    print(
        f"4. Seed reproduction B: {settings.dispatchers} dispatchers, {settings.hot_instances} hot"
        f" instances x {settings.history_events} events, {settings.lock_timeout_ms} ms lock,"
        f" {settings.duration_s:.0f} s"
    )
    results: dict[str, ContentionResult] = {}
    schemas = {"taskhub-pg": SCHEMA}
    if with_duroxide:
        schemas["duroxide 0.2.2"] = DUROXIDE_SCHEMA
    for label, schema in schemas.items():
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DELETE FROM "{schema}".orchestrator_queue')
            seed_hot_instances(conn, schema, settings)
        results[label] = run_contention(url, schema, settings)

    rows: list[tuple[str, Callable[[ContentionResult], str]]] = [
        ("turns per second", lambda r: f"{r.turns_per_second:.1f}"),
        ("fetch latency p50 (ms)", lambda r: f"{r.latency_ms(0.5):.1f}"),
        ("fetch latency p99 (ms)", lambda r: f"{r.latency_ms(0.99):.1f}"),
        ("expired leases returned", lambda r: str(r.expired_leases)),
        ("least lease left at return (ms)", lambda r: str(r.min_lease_remaining_ms)),
        ("ack failures", lambda r: str(r.ack_failures)),
        ("deadlocks", lambda r: str(r.deadlocks)),
        ("statement timeouts", lambda r: str(r.timeouts)),
        ("max attempt_count", lambda r: str(r.max_attempt_count)),
    ]
    labels = list(results)
    print("   " + f"{'':34}" + "".join(f"{label:>16}" for label in labels))
    for name, cell in rows:
        print("   " + f"{name:34}" + "".join(f"{cell(results[label]):>16}" for label in labels))
    if with_duroxide:
        ours, theirs = results["taskhub-pg"], results["duroxide 0.2.2"]
        if theirs.turns_per_second:
            print(
                f"   throughput ratio taskhub-pg / duroxide 0.2.2: "
                f"{ours.turns_per_second / theirs.turns_per_second:.1f}x"
            )


def main() -> None:
    url = demo_database_url()
    with_duroxide = fresh_schemas(url)
    print(f"1. Schema {SCHEMA!r} migrated to head with Alembic")
    with TaskHub.connect(url, SCHEMA) as hub, psycopg.connect(url, autocommit=True) as conn:
        stale_clock(hub, conn)
        contended_candidate(hub, url)
    contention(url, with_duroxide)
    print()
    print("5. Look around with psql (the server stays up; `make stop` stops it):")
    print(f"   psql '{url}'")
    print(f"   SELECT * FROM {SCHEMA}.taskhub_queue_health;")
    print(f"   SELECT * FROM {SCHEMA}.taskhub_current_leases;")
    print(f"   SELECT * FROM {SCHEMA}.taskhub_poison_candidates;")
    print("   (docs/ops.md is the runbook)")
    print(f"   \\df {SCHEMA}.*")


if __name__ == "__main__":
    main()
