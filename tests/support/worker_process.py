"""A worker process for crash tests: runs a `Sleep` activity that records in
<schema>.activity_runs when it started, was cancelled and finished.

    python -m tests.support.worker_process URL SCHEMA LOCK_TIMEOUT_MS
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

import psycopg

from provider import ActivityContext, ActivityWorker, TagFilter, TaskHub, now_ms

RUNS_TABLE = """
CREATE TABLE IF NOT EXISTS "{schema}".activity_runs (
    pid          integer NOT NULL,
    instance_id  text    NOT NULL,
    activity_id  bigint  NOT NULL,
    lock_token   text    NOT NULL,
    attempt      integer NOT NULL,
    started_ms   bigint  NOT NULL,
    cancelled_ms bigint,
    finished_ms  bigint
)
"""


def record_start(url: str, schema: str, ctx: ActivityContext) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f'INSERT INTO "{schema}".activity_runs'
            " (pid, instance_id, activity_id, lock_token, attempt, started_ms)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [os.getpid(), ctx.instance_id, ctx.activity_id, ctx.lock_token, ctx.attempt, now_ms()],
        )


def record(url: str, schema: str, ctx: ActivityContext, column: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f'UPDATE "{schema}".activity_runs SET {column} = %s WHERE lock_token = %s',
            [now_ms(), ctx.lock_token],
        )


def sleep_activity(url: str, schema: str) -> Any:
    def run(ctx: ActivityContext, seconds: float) -> str:
        record_start(url, schema, ctx)
        if ctx.token.wait(seconds):
            record(url, schema, ctx, "cancelled_ms")
            return "cancelled"
        record(url, schema, ctx, "finished_ms")
        return f"slept {seconds} s"

    return run


def main(url: str, schema: str, lock_timeout_ms: int) -> None:
    hub = TaskHub.connect(url, schema, worker_lock_timeout_ms=lock_timeout_ms)
    worker = ActivityWorker(hub, concurrency=1, tags=TagFilter.any(), idle_poll_ms=10)
    worker.register("Sleep", sleep_activity(url, schema))
    worker.start()
    print("ready", flush=True)
    threading.Event().wait()  # never set: serves until the test kills this process


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
