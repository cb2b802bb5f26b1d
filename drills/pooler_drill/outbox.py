"""The outbox through the pooler: an application writes its own row and
starts an orchestration in one transaction of its own connection (through
the pooler, prepare_threshold=None, as the docs say), then commits or rolls
back; afterwards, read on the server directly, each committed start is
queued with its row and each rolled-back one left nothing."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from drills.pooler_drill.tally import Tally
from provider import TaskHub

ORDERS = "drill_orders"  # the application's own table, in the hub's schema
ORCHESTRATION = "DrillOutboxOrder"


@dataclass
class OutboxReport:
    tally: Tally = field(default_factory=Tally)
    committed: list[str] = field(default_factory=list)
    rolled_back: list[str] = field(default_factory=list)
    committed_found: int = 0  # committed starts queued, with their row
    rolled_back_found: int = 0  # rolled-back starts or rows found: must be 0

    @property
    def wrong(self) -> int:
        return len(self.committed) - self.committed_found + self.rolled_back_found


def _orders(schema: str) -> sql.Composed:
    return sql.SQL("{}.{}").format(sql.Identifier(schema), sql.Identifier(ORDERS))


def _one_connection(
    hub: TaskHub,
    url: str,
    schema: str,
    prefix: str,
    starts: int,
    caller: dict[str, Any],
    report: OutboxReport,
    lock: threading.Lock,
) -> None:
    """`starts` transactions on one connection of the application's own."""
    insert = sql.SQL("INSERT INTO {} (order_id) VALUES (%s)").format(_orders(schema))
    try:
        conn = psycopg.connect(url, **caller)
    except psycopg.Error as error:
        report.tally.failed(error)
        return
    with conn:
        for n in range(starts):
            instance = f"{prefix}-{n}"
            try:
                conn.execute(insert, [instance])
                hub.start_orchestration(instance, ORCHESTRATION, {"order": n}, conn=conn)
                report.tally.called(2)
                if n % 2:
                    conn.rollback()
                else:
                    conn.commit()
            except Exception as error:
                report.tally.failed(error)
                conn.rollback()
                continue
            with lock:
                (report.rolled_back if n % 2 else report.committed).append(instance)


# Committed starts that are queued and have their order row.
COMMITTED = """
SELECT count(*)
  FROM {orders} AS o
 WHERE o.order_id = ANY(%(ids)s)
   AND EXISTS (SELECT 1 FROM {queue} AS q WHERE q.instance_id = o.order_id)
"""
# Whatever a rolled-back transaction left: order rows and queued starts.
LEFT_BEHIND = """
SELECT (SELECT count(*) FROM {orders} WHERE order_id = ANY(%(ids)s))
     + (SELECT count(*) FROM {queue} WHERE instance_id = ANY(%(ids)s))
"""


def _count(direct_url: str, schema: str, query: str, instances: list[str]) -> int:
    """`query` (COMMITTED or LEFT_BEHIND) over `instances`, on the server directly."""
    statement = sql.SQL(query).format(  # one of the constants above
        orders=_orders(schema), queue=sql.Identifier(schema, "orchestrator_queue")
    )
    with psycopg.connect(direct_url, autocommit=True) as conn:
        row = conn.execute(statement, {"ids": instances}).fetchone()
    return int(row[0]) if row else 0


def run(
    url: str,
    direct_url: str,
    schema: str,
    settings: dict[str, Any],
    caller: dict[str, Any],
    connections: int,
    starts: int,
) -> OutboxReport:
    """`connections` application connections (psycopg settings `caller`),
    `starts` transactions each, half committed; the hub opened with `settings`."""
    report = OutboxReport()
    with psycopg.connect(direct_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE TABLE IF NOT EXISTS {} (order_id text PRIMARY KEY)").format(
                _orders(schema)
            )
        )
    try:
        hub = TaskHub.connect(url, schema, pool_max_size=2, **settings)
    except Exception as error:
        report.tally.failed(error)
        return report
    lock = threading.Lock()
    with hub:
        running = [
            threading.Thread(
                target=_one_connection,
                args=(hub, url, schema, f"{schema}-outbox-c{c}", starts, caller, report, lock),
            )
            for c in range(connections)
        ]
        for thread in running:
            thread.start()
        for thread in running:
            thread.join()
    report.committed_found = _count(direct_url, schema, COMMITTED, report.committed)
    report.rolled_back_found = _count(direct_url, schema, LEFT_BEHIND, report.rolled_back)
    return report
