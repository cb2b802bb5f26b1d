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

import psycopg
import pytest

from devkit.workloads.flavours import Flavour
from tests.support.hot_path_plans import explained_fetch_and_ack, queue_work

QUEUES = ("orchestrator_queue", "worker_queue", "instance_locks")


def hot_path_plans(url: str, schema: str) -> list[str]:
    """The plans of every statement inside one fetch and ack on each queue,
    on queues the planner has never analyzed (as on a new hub)."""
    queue_work(url, schema, [f"plan-{n}" for n in range(20)])
    with psycopg.connect(url, autocommit=True) as conn:
        return explained_fetch_and_ack(conn, schema)


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
