"""The hot path never reads a queue by a bitmap scan. A bitmap heap scan
never marks the index entries of deleted rows dead, so on a queue whose
consumed messages are gone, every fetch walked all their entries again until
the next VACUUM: at 60 orchestrations/s with retention, a fetch went from
0.6 to 5.5 ms of server time and p99 start-to-completion to 0.7 s
(docs/benchmarks.md, "Retention at 60/s"). The planner picks bitmap scans on
a queue it has never analyzed, or after a prune emptied most of it; revision
0026 plans the hot path without them, and reads one instance's messages by
the instance's own index. 0025 has the defect."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest

from devkit.workloads.flavours import Flavour
from provider import TaskHub
from tests.support.work_items import activity_completed, activity_execute, start_orchestration

QUEUES = ("orchestrator_queue", "worker_queue", "instance_locks")


def hot_path_plans(url: str, schema: str) -> list[str]:
    """The plans of every statement inside one fetch and ack on each queue,
    on queues the planner has never analyzed (as on a new hub)."""
    hub = TaskHub.connect(url, schema)
    try:
        for n in range(20):
            hub.enqueue_orchestrator_work(f"plan-{n}", start_orchestration(f"plan-{n}"))
            hub.enqueue_worker_work(activity_execute(f"plan-{n}", 1))
    finally:
        hub.close()
    plans: list[str] = []
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute("LOAD 'auto_explain'")
        except psycopg.errors.UndefinedFile:
            pytest.skip("this server has no auto_explain")
        conn.add_notice_handler(lambda notice: plans.append(notice.message_primary or ""))
        for setting in (
            "SET auto_explain.log_min_duration = 0",
            "SET auto_explain.log_nested_statements = on",
            "SET auto_explain.log_level = notice",
            "SET client_min_messages = notice",
        ):
            conn.execute(setting)
        q = f'"{schema}"'
        row: Any = conn.execute(
            f"SELECT out_lock_token, out_execution_id FROM {q}.fetch_orchestration_item("
            "(extract(epoch FROM now()) * 1000)::bigint, 30000)"
        ).fetchone()
        conn.execute(
            f"SELECT {q}.ack_orchestration_item(%s, (extract(epoch FROM now()) * 1000)::bigint,"
            " %s, '[]', '[]', '[]', '{}')",
            [row[0], row[1]],
        )
        token: Any = conn.execute(
            f"SELECT out_lock_token, out_work_item FROM {q}.fetch_work_item("
            "(extract(epoch FROM now()) * 1000)::bigint, 30000)"
        ).fetchone()
        instance = json.loads(token[1])["ActivityExecute"]["instance"]
        conn.execute(
            f"SELECT {q}.ack_worker(%s, %s, %s, (extract(epoch FROM now()) * 1000)::bigint)",
            [token[0], instance, json.dumps(activity_completed(instance, 1))],
        )
    return plans


def bitmap_scans_of_queues(plans: list[str]) -> list[str]:
    found = []
    for plan in plans:
        lines = plan.splitlines()
        for line in lines:
            scanned = line.split("Bitmap Heap Scan on ")[1:]
            if scanned and scanned[0].split(" ")[0] in QUEUES:
                found.append(f"{line.strip()} in: {lines[1].strip()[:100]}")
    return found


@pytest.mark.pins_defect(
    "the hot path reads a queue it never analyzed by bitmap scans", fails_on=("taskhub-0025",)
)
def test_fetch_and_ack_never_read_a_queue_by_a_bitmap_scan(
    flavour: Flavour, flavour_schema: str, database_url: str
) -> None:
    if flavour.name == "duroxide-0.2.2":
        pytest.skip("duroxide 0.2.2 leaves its plans to the planner")
    plans = hot_path_plans(database_url, flavour_schema)
    assert plans, "auto_explain logged no plan"
    assert bitmap_scans_of_queues(plans) == []
