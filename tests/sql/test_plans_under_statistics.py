"""The hot path keeps its access paths whatever the statistics say (issue 56,
item 2): never analyzed, analyzed empty, analyzed after a churn emptied the
queue (as autovacuum does early in a hub's life), analyzed full and emptied
since, and analyzed full. In each state 100,000 future-dated messages wait
on both queues, unknown to the statistics, and one fetch and one ack on each
queue must still:

* read no hub table by a sequential or bitmap scan, nor walk a whole index
  (an index scan with no index condition);
* cost at most twice the buffers of the same calls on empty queues.

0028's per-instance message read carried `ORDER BY q.id`: on a queue analyzed
after a churn emptied it (pages, no rows), its generic plan walked the
primary key in id order to spare a sort of "one row" and filtered out every
message of the queue: 27 ms and 3,300 buffers per fetch instead of 0.4 ms.
0029 reads the instance's messages with no order the planner could take from
another index, and orders them itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.flavours import Flavour
from devkit.workloads.work_items import activity_execute, external_raised, start_orchestration
from tests.support.hot_path_plans import NOW_MS, explained_fetch_and_ack, queue_work

BACKLOG = 100_000
HUB_TABLES = (
    "orchestrator_queue",
    "worker_queue",
    "instance_locks",
    "history",
    "instances",
    "executions",
    "kv_store",
    "sessions",
)
QUEUES = ("orchestrator_queue", "worker_queue")
MEASURED = ("SET auto_explain.log_analyze = on", "SET auto_explain.log_buffers = on")
# What the cost compares: the buffers of the calls the test makes (the
# top-level statements, whose figures include every statement they run).
SCAN = re.compile(
    r"(?P<kind>Seq Scan|Bitmap Heap Scan|Index (Only )?Scan)( using \S+)? on (?P<table>\w+)"
)
TOP_LEVEL = re.compile(r"Query Text: SELECT (out_lock_token|\"[^\"]+\"\.ack_)")


def future_backlog(conn: psycopg.Connection[Any], schema: str) -> None:
    """BACKLOG messages on each queue, visible in an hour, each of an
    instance of its own (a burst of timers, and activities retried later)."""
    start = json.dumps(start_orchestration("later"))
    activity = json.dumps(activity_execute("later", 1))
    for queue, item in (("orchestrator_queue", start), ("worker_queue", activity)):
        conn.execute(
            f'INSERT INTO "{schema}".{queue} (instance_id, work_item, visible_at, created_at)'
            " SELECT 'later-' || n, %s, now() + interval '1 hour', now()"
            " FROM generate_series(1, %s) AS n",
            [item, BACKLOG],
        )


def analyze(conn: psycopg.Connection[Any], schema: str) -> None:
    for queue in QUEUES:
        conn.execute(f'ANALYZE "{schema}".{queue}')


def never_analyzed(conn: psycopg.Connection[Any], schema: str) -> None:
    """A new hub: no statistics at all."""


def analyzed_empty(conn: psycopg.Connection[Any], schema: str) -> None:
    analyze(conn, schema)


def analyzed_after_a_churn(conn: psycopg.Connection[Any], schema: str) -> None:
    """A hundred messages came and went, then autovacuum analyzed: the
    statistics say pages and no rows."""
    future_backlog_of(conn, schema, 100)
    for queue in QUEUES:
        conn.execute(f'DELETE FROM "{schema}".{queue}')
    analyze(conn, schema)


def analyzed_full_then_emptied(conn: psycopg.Connection[Any], schema: str) -> None:
    """The statistics say BACKLOG rows more than the queues hold."""
    future_backlog(conn, schema)
    analyze(conn, schema)
    for queue in QUEUES:
        conn.execute(f'DELETE FROM "{schema}".{queue}')


def future_backlog_of(conn: psycopg.Connection[Any], schema: str, count: int) -> None:
    for queue in QUEUES:
        conn.execute(
            f'INSERT INTO "{schema}".{queue} (instance_id, work_item, visible_at, created_at)'
            " SELECT 'churn-' || n, '{}', now(), now() FROM generate_series(1, %s) AS n",
            [count],
        )


STATES: dict[str, Callable[[psycopg.Connection[Any], str], None]] = {
    "never analyzed": never_analyzed,
    "analyzed empty": analyzed_empty,
    "analyzed after a churn": analyzed_after_a_churn,
    "analyzed full, then emptied": analyzed_full_then_emptied,
    "analyzed with the backlog": never_analyzed,  # analyzed once it is there
}
ANALYZED_WITH_THE_BACKLOG = "analyzed with the backlog"


def walks(plans: list[str]) -> list[str]:
    """The nodes that read a hub table other than by an index condition:
    sequential and bitmap scans, and index scans with no condition."""
    found = []
    for plan in plans:
        lines = plan.splitlines()
        for number, line in enumerate(lines):
            scan = SCAN.search(line)
            if scan is None or scan["table"] not in HUB_TABLES:
                continue
            if scan["kind"].startswith("Index"):
                depth = len(line) - len(line.lstrip(" ->"))
                details = []
                for following in lines[number + 1 :]:
                    if "->" in following or len(following) - len(following.lstrip()) < depth:
                        break
                    details.append(following)
                if any("Index Cond:" in detail for detail in details):
                    continue
            query = next((text for text in lines if text.startswith("Query Text:")), lines[0])
            found.append(f"{line.strip()} in: {query.strip()[:120]}")
    return found


def buffers(plans: list[str]) -> int:
    """Shared buffers hit and read by the calls the test made."""
    total = 0
    for plan in plans:
        if not TOP_LEVEL.search(plan):
            continue
        figures = re.search(r"Buffers: shared((?: \w+=\d+)+)", plan)
        if figures:
            total += sum(
                int(value)
                for name, value in re.findall(r"(\w+)=(\d+)", figures.group(1))
                if name in ("hit", "read")
            )
    return total


def explained(url: str, schema: str, instance: str, steered: bool = False) -> list[str]:
    """The plans of a fetch and an ack on each queue, on a session that made
    one such pair before: the first pair of a session reads the catalogue to
    compile the functions and plan their statements (about 1,900 buffers),
    which would hide what the queues cost. Steered: the work is a tenant's,
    under a limit for each tenant (the fetches' label paths and lanes)."""
    queue_work(url, schema, [f"{instance}-warm-up", instance])
    with psycopg.connect(url, autocommit=True) as conn:
        if steered:
            for queue in QUEUES:
                conn.execute(
                    f'UPDATE "{schema}".{queue} SET taskhub_labels = %s WHERE instance_id LIKE %s',
                    [["tenant=due"], f"{instance}%"],
                )
        explained_fetch_and_ack(conn, schema, MEASURED)
        return explained_fetch_and_ack(conn, schema, MEASURED)


def assert_paths_hold(
    flavour: Flavour,
    new_schema: Callable[[Flavour], str],
    url: str,
    state: str,
    steered: bool = False,
) -> None:
    """One fetch and ack on each queue of a hub in `state` with the backlog,
    against the same on a hub in `state` without it. Steered: a limit for
    each tenant, and the backlog two tenants' (label sets after the due
    work's, which the orchestration fetch reads in turn)."""
    quiet, busy = new_schema(flavour), new_schema(flavour)
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in (quiet, busy):
            STATES[state](conn, schema)
            if steered:
                conn.execute(
                    f"SELECT \"{schema}\".taskhub_set_flow_limit('label_each', 'tenant', 2)"
                )
        future_backlog(conn, busy)
        if steered:
            for queue in QUEUES:
                conn.execute(
                    f'UPDATE "{busy}".{queue}'
                    " SET taskhub_labels = ARRAY['tenant=later-' || (id % 2)]"
                )
        if state == ANALYZED_WITH_THE_BACKLOG:
            analyze(conn, busy)
    anchor = explained(url, quiet, "due-quiet", steered)
    plans = explained(url, busy, "due-busy", steered)
    assert plans and anchor, "auto_explain logged no plan"
    assert walks(plans) == []
    assert buffers(plans) <= 2 * buffers(anchor), (buffers(plans), buffers(anchor))


@pytest.mark.slow
@pytest.mark.parametrize("state", STATES)
def test_the_hot_path_keeps_its_paths_whatever_the_statistics(
    flavour: Flavour, new_flavour_schema: Callable[[Flavour], str], database_url: str, state: str
) -> None:
    if flavour.name == "duroxide-0.2.2":
        pytest.skip("duroxide 0.2.2 leaves its plans to the planner")
    assert_paths_hold(flavour, new_flavour_schema, database_url, state)


@pytest.mark.slow
@pytest.mark.parametrize("state", STATES)
def test_the_steered_path_keeps_its_paths_whatever_the_statistics(
    flavour: Flavour, new_flavour_schema: Callable[[Flavour], str], database_url: str, state: str
) -> None:
    """The same with labels and a limit for each tenant: the label paths of
    both fetches, the orchestration fetch's lanes (one label set at a time,
    by taskhub_orch_lane_idx) among them."""
    if flavour.name != "taskhub":
        pytest.skip("labels and their rules are the head's (revision 0029)")
    assert_paths_hold(flavour, new_flavour_schema, database_url, state, steered=True)


@pytest.mark.pins_defect(
    "the per-instance message read walks the queue's primary key when the"
    " statistics were taken after a churn emptied it",
    fails_on=("taskhub-0028",),
)
def test_a_queue_analyzed_after_a_churn_is_still_read_by_the_instance(
    flavour: Flavour, new_flavour_schema: Callable[[Flavour], str], database_url: str
) -> None:
    if flavour.name == "duroxide-0.2.2":
        pytest.skip("duroxide 0.2.2 leaves its plans to the planner")
    assert_paths_hold(flavour, new_flavour_schema, database_url, "analyzed after a churn")


def test_a_turns_messages_come_in_id_order_whatever_order_the_read_returns(
    hub_schema: str, database_url: str
) -> None:
    """The read asks for no order, and sorts when its scan did not return id
    order. The instance's index always does: without it (dropped here) the
    read is a sequential scan in the order the rows were written."""
    q = f'"{hub_schema}"'
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {q}.taskhub_orch_instance_idx")
        for message_id, data in ((30, "third"), (10, "first"), (20, "second")):
            item = start_orchestration("o") if message_id == 10 else external_raised("o", data=data)
            conn.execute(
                f"INSERT INTO {q}.orchestrator_queue"
                " (id, instance_id, work_item, visible_at, created_at)"
                " VALUES (%s, 'o', %s, now(), now())",
                [message_id, json.dumps(item)],
            )
        row = conn.execute(
            f"SELECT out_messages::text FROM {q}.fetch_orchestration_item({NOW_MS}, 30000)"
        ).fetchone()
    assert row is not None
    messages = json.loads(row[0])
    assert [next(iter(m)) for m in messages] == [
        "StartOrchestration",
        "ExternalRaised",
        "ExternalRaised",
    ]
    assert [m["ExternalRaised"]["data"] for m in messages[1:]] == ["second", "third"]


@pytest.mark.pins_defect(
    "indexes ending in the id serve a lookup by id as a walk of the whole index",
    fails_on=("taskhub-0028",),
)
def test_only_the_primary_key_holds_a_queues_id(
    flavour: Flavour, new_flavour_schema: Callable[[Flavour], str], database_url: str
) -> None:
    """By construction, not by the statistics: a lookup by id can be served
    by no index of a queue but its primary key. An index ending in the id
    serves one too, as a walk of the whole index (with statistics that say
    "empty", its cost ties the primary key's): 0028's visible_at indexes
    made an ack read 770 buffers behind 100,000 rows. The other indexes
    hold the id as id + 0."""
    if flavour.name == "duroxide-0.2.2":
        pytest.skip("duroxide 0.2.2's indexes are its own")
    schema = new_flavour_schema(flavour)
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT c.relname, i.indexrelid::regclass::text"
            "  FROM pg_index AS i"
            "  JOIN pg_class AS c ON c.oid = i.indrelid"
            "  JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attname = 'id'"
            " WHERE c.relnamespace = %s::regnamespace"
            "   AND c.relname IN ('orchestrator_queue', 'worker_queue')"
            "   AND NOT i.indisprimary"
            "   AND a.attnum = ANY (i.indkey::int2[])",
            [schema],
        ).fetchall()
    assert rows == []
