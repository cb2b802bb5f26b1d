"""The plans of the hot path, as auto_explain logs them: one fetch and one ack
on each queue, on this session, every nested statement explained and
handed back as a notice (tests/sql/test_no_jit.py, test_queue_plans.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import activity_completed, activity_execute, start_orchestration
from provider import TaskHub

NOW_MS = "(extract(epoch FROM now()) * 1000)::bigint"
EXPLAIN_EVERY_STATEMENT = (
    "SET auto_explain.log_min_duration = 0",
    "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_level = notice",
    "SET client_min_messages = notice",
)


def queue_work(url: str, schema: str, instances: Sequence[str]) -> None:
    """A start and an activity waiting for each instance."""
    hub = TaskHub.connect(url, schema)
    try:
        for instance in instances:
            hub.enqueue_orchestrator_work(instance, start_orchestration(instance))
            hub.enqueue_worker_work(activity_execute(instance, 1))
    finally:
        hub.close()


def explained_fetch_and_ack(
    conn: psycopg.Connection[Any], schema: str, settings: Sequence[str] = ()
) -> list[str]:
    """Every plan auto_explain logs for one fetch and ack on each queue, with
    these settings besides; skipped where the server has no auto_explain."""
    plans: list[str] = []
    try:
        conn.execute("LOAD 'auto_explain'")
    except psycopg.errors.UndefinedFile:
        pytest.skip("this server has no auto_explain")
    conn.add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
    for setting in (*EXPLAIN_EVERY_STATEMENT, *settings):
        conn.execute(setting)
    q = f'"{schema}"'
    row: Any = conn.execute(
        f"SELECT out_lock_token, out_execution_id"
        f" FROM {q}.fetch_orchestration_item({NOW_MS}, 30000)"
    ).fetchone()
    conn.execute(
        f"SELECT {q}.ack_orchestration_item(%s, {NOW_MS}, %s, '[]', '[]', '[]', '{{}}')",
        [row[0], row[1]],
    )
    leased: Any = conn.execute(
        f"SELECT out_lock_token, out_work_item FROM {q}.fetch_work_item({NOW_MS}, 30000)"
    ).fetchone()
    instance = json.loads(leased[1])["ActivityExecute"]["instance"]
    conn.execute(
        f"SELECT {q}.ack_worker(%s, %s, %s, {NOW_MS})",
        [leased[0], instance, json.dumps(activity_completed(instance, 1))],
    )
    return plans
