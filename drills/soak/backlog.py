"""A backlog for the soak to serve beside: work due tomorrow, as durable
timers set a day ahead leave in a real hub (orchestrator_queue) and work
given back with a long delay (worker_queue). No fetch reaches it while the
soak runs, but every vacuum of those tables does: what autovacuum waits for
by default grows with it (a fifth of the table dead), so a backlog shows
whether the queues are vacuumed as often as their churn needs.

`without_upkeep` puts the server's autovacuum defaults back on the queue and
lease tables (revision 0021 sets its own): the anchor to compare with."""

from __future__ import annotations

import psycopg
from psycopg import sql

from drills.soak.sampler import QUEUE_AND_LEASE_TABLES

# The storage parameters revision 0021 sets (sql/head/tables/queue_upkeep.sql).
UPKEEP_PARAMETERS = (
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_cost_delay",
)

_TIMERS = """
INSERT INTO {s}.orchestrator_queue (instance_id, work_item, visible_at, created_at)
SELECT 'backlog-' || n,
       json_build_object('TimerFired', json_build_object(
           'instance', 'backlog-' || n, 'execution_id', 1, 'id', 1,
           'fire_at_ms', (extract(epoch FROM now() + interval '1 day') * 1000)::bigint))::text,
       now() + interval '1 day', now()
  FROM generate_series(1, %(n)s) AS n
"""
_ACTIVITIES = """
INSERT INTO {s}.worker_queue (work_item, visible_at, created_at, instance_id, execution_id,
                              activity_id)
SELECT json_build_object('ActivityExecute', json_build_object(
           'instance', 'backlog-' || n, 'execution_id', 1, 'id', 1, 'name', 'Later',
           'input', '{{}}'))::text,
       now() + interval '1 day', now(), 'backlog-' || n, 1, 1
  FROM generate_series(1, %(n)s) AS n
"""


def seed(url: str, schema: str, messages: int) -> None:
    """`messages` due tomorrow, half on each queue; then VACUUM ANALYZE, as a
    hub that has held them a while would be."""
    s = sql.Identifier(schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL(_TIMERS).format(s=s), {"n": messages // 2})
        conn.execute(sql.SQL(_ACTIVITIES).format(s=s), {"n": messages - messages // 2})
        for table in ("orchestrator_queue", "worker_queue"):
            conn.execute(sql.SQL("VACUUM ANALYZE {}.{}").format(s, sql.Identifier(table)))


def without_upkeep(url: str, schema: str) -> None:
    """The server's autovacuum defaults on the queue and lease tables."""
    with psycopg.connect(url, autocommit=True) as conn:
        for table in QUEUE_AND_LEASE_TABLES:
            conn.execute(
                sql.SQL("ALTER TABLE {}.{} RESET ({})").format(
                    sql.Identifier(schema),
                    sql.Identifier(table),
                    sql.SQL(", ").join(sql.SQL(p) for p in UPKEEP_PARAMETERS),
                )
            )
