"""The runbook (docs/ops.md) as Python: the one reader of the operator
views, and the operator's actions, as the psql queries use them. The
command line, the status, the metrics collector and the test kit read here.

Reads return plain rows (dicts of JSON-friendly values); actions return what
the procedure returned and raise RunbookError on a refusal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from provider.schema_name import quote_schema
from provider.shapes import json_dumps
from provider.tracing import current_trace_context

Row = dict[str, Any]

# How far ahead of the database a caller's clock may stamp a row
# (sql/head/helpers/taskhub_max_clock_skew_ms.sql).
MAX_CLOCK_SKEW_MS = 1000


@dataclass(frozen=True)
class View:
    """A runbook view (sql/head/operations/): what a read of it selects, in
    which order."""

    relation: str
    columns: str
    order: str


# Each read of `taskhub-pg inspect`, and what the status and metrics count.
VIEWS: dict[str, View] = {
    "queues": View("taskhub_queue_health", "*", "queue"),
    "leases": View(
        "taskhub_current_leases",
        "kind, instance_id, activity_id, lock_token, leased_since, remaining_ms, messages",
        "remaining_ms",
    ),
    "poison": View(
        "taskhub_poison_candidates",
        "queue, id, instance_id, attempt_count, lock_token, created_at, work_item_head",
        "attempt_count DESC",
    ),
    "dead-letters": View(
        "dead_letters",
        "id, source_queue, instance_id, attempt_count, reason, dead_at, original_created_at",
        "dead_at DESC",
    ),
    "stuck": View(
        "taskhub_stuck_instances",
        "instance_id, orchestration_name, current_execution_id, quiet_for",
        "quiet_for DESC",
    ),
    "shielded": View(
        "shielded_failures",
        "id, instance_id, execution_id, operation, condition, message, attempt_count,"
        " retry_after_ms, shielded_at",
        "shielded_at DESC",
    ),
}


class RunbookError(Exception):
    """An action refused (exit code `code` on the command line)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def json_value(value: Any) -> Any:
    """A value as JSON carries it: times as ISO 8601, intervals in seconds."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def _rows(conn: psycopg.Connection[Any], query: sql.Composed, params: Any = None) -> list[Row]:
    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(query, params)
        return [{k: json_value(v) for k, v in row.items()} for row in cur.fetchall()]


def read_view(
    conn: psycopg.Connection[Any], schema: str, name: str, limit: int | None = None
) -> list[Row]:
    """The rows of one of VIEWS, in its order; all of them when limit is None."""
    view = VIEWS[name]
    query = sql.SQL("SELECT {columns} FROM {schema}.{relation} ORDER BY {order} LIMIT %s").format(
        columns=sql.SQL(view.columns),
        schema=sql.Identifier(schema),
        relation=sql.Identifier(view.relation),
        order=sql.SQL(view.order),
    )
    return _rows(conn, query, [limit])


def queue_health(conn: psycopg.Connection[Any], schema: str) -> list[Row]:
    """A row per queue: ready, scheduled and leased messages, the highest
    delivery count, dead letters, the oldest ready message's age."""
    return read_view(conn, schema, "queues")


def lease_counts(conn: psycopg.Connection[Any], schema: str) -> dict[tuple[str, bool], int]:
    """Leases held now, by (kind, still live)."""
    rows = conn.execute(
        sql.SQL(
            "SELECT kind, remaining_ms > 0, count(*) FROM {}.taskhub_current_leases GROUP BY 1, 2"
        ).format(sql.Identifier(schema))
    ).fetchall()
    return {(str(kind), bool(live)): int(n) for kind, live, n in rows}


# The tables to watch for upkeep (docs/ops.md, "Maintenance"): those every
# turn and activity churns, then those retention keeps in bounds.
UPKEEP_TABLES = (
    "orchestrator_queue",
    "worker_queue",
    "instance_locks",
    "history",
    "executions",
    "instances",
)


def table_upkeep(conn: psycopg.Connection[Any], schema: str) -> list[Row]:
    """A row per table of UPKEEP_TABLES: its size with indexes and TOAST,
    live and dead rows, autovacuum runs and the seconds since the last, and
    the share of its updates that were HOT (PostgreSQL's statistics)."""
    return _rows(
        conn,
        sql.SQL(
            "SELECT c.relname AS table_name,"
            "       pg_total_relation_size(c.oid) AS total_bytes,"
            "       s.n_live_tup AS live_rows, s.n_dead_tup AS dead_rows,"
            "       s.autovacuum_count,"
            "       round(extract(epoch FROM now() - s.last_autovacuum))::bigint"
            "           AS since_autovacuum_s,"
            "       round(100.0 * s.n_tup_hot_upd / nullif(s.n_tup_upd, 0))::int AS hot_update_pct"
            "  FROM pg_catalog.pg_class AS c"
            "  JOIN pg_catalog.pg_stat_user_tables AS s ON s.relid = c.oid"
            " WHERE c.relnamespace = to_regnamespace(%(schema)s)"
            "   AND c.relname = ANY (%(tables)s)"
            " ORDER BY array_position(%(tables)s, c.relname::text)"
        ).format(),
        {"schema": quote_schema(schema), "tables": list(UPKEEP_TABLES)},
    )


def count_rows(conn: psycopg.Connection[Any], schema: str, name: str) -> int:
    """How many rows one of VIEWS holds now."""
    row = conn.execute(
        sql.SQL("SELECT count(*) FROM {}.{}").format(
            sql.Identifier(schema), sql.Identifier(VIEWS[name].relation)
        )
    ).fetchone()
    return int(row[0]) if row else 0


@dataclass(frozen=True)
class InstanceReport:
    instance: Row
    executions: list[Row]
    queued: list[Row]
    leases: list[Row]
    dead_letters: list[Row]
    # Why it failed, when its current execution did (read_failure); else None.
    failure: Row | None = None


def read_instance(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> InstanceReport:
    s = sql.Identifier(schema)
    found = _rows(
        conn, sql.SQL("SELECT * FROM {}.instances WHERE instance_id = %s").format(s), [instance_id]
    )
    instance = found[0] if found else pending_instance(conn, schema, instance_id)
    if instance is None:
        raise RunbookError(f"instance {instance_id} not found", code=3)
    return InstanceReport(
        instance=instance,
        executions=_rows(
            conn,
            sql.SQL(
                "SELECT execution_id, status, started_at, completed_at FROM {}.executions"
                " WHERE instance_id = %s ORDER BY execution_id"
            ).format(s),
            [instance_id],
        ),
        queued=_rows(
            conn,
            sql.SQL(
                "SELECT 'orchestrator' AS queue, id, visible_at, attempt_count,"
                "       lock_token IS NOT NULL AS leased, left(work_item, 120) AS work_item_head"
                "  FROM {0}.orchestrator_queue WHERE instance_id = %s"
                " UNION ALL "
                "SELECT 'worker', id, visible_at, attempt_count, lock_token IS NOT NULL,"
                "       left(work_item, 120)"
                "  FROM {0}.worker_queue WHERE instance_id = %s ORDER BY 1, 2"
            ).format(s),
            [instance_id, instance_id],
        ),
        leases=_rows(
            conn,
            sql.SQL(
                "SELECT kind, activity_id, lock_token, leased_since, remaining_ms"
                " FROM {}.taskhub_current_leases WHERE instance_id = %s"
            ).format(s),
            [instance_id],
        ),
        dead_letters=_rows(
            conn,
            sql.SQL(
                "SELECT id, source_queue, attempt_count, reason, dead_at FROM {}.dead_letters"
                " WHERE instance_id = %s ORDER BY dead_at DESC"
            ).format(s),
            [instance_id],
        ),
        failure=read_failure(conn, schema, instance_id),
    )


# The history events that say what went wrong, and what the runtime scheduled
# for each (a completion names its scheduling event by source_event_id).
_FAILED_STEPS = sql.SQL(
    """
    WITH events AS (
        -- The kind is read from the event itself (the event_type column is
        -- the writer's to name); only events that look like one are parsed.
        SELECT h.event_id,
               CASE WHEN h.event_data::text ~ {kinds}
                    THEN h.event_data::jsonb END AS event
          FROM {schema}.history AS h
         WHERE h.instance_id = %(instance)s
           AND h.execution_id = %(execution)s
    )
    SELECT f.event_id,
           f.event ->> 'type' AS kind,
           s.event ->> 'name' AS name,
           (SELECT count(*)
              FROM events AS again
             WHERE again.event ->> 'type' = s.event ->> 'type'
               AND again.event ->> 'name' = s.event ->> 'name') AS attempts,
           f.event -> 'details' AS details
      FROM events AS f
      LEFT JOIN events AS s
        ON s.event_id = (f.event ->> 'source_event_id')::bigint
     WHERE f.event ->> 'type' IN ('ActivityFailed', 'SubOrchestrationFailed', 'OrchestrationFailed')
     ORDER BY f.event_id
    """
)
_FAILURE_KINDS = (
    r'"type"\s*:\s*"(Activity|SubOrchestration|Orchestration)Failed"'
    r'|"type"\s*:\s*"(ActivityScheduled|SubOrchestrationScheduled)"'
)


def read_failure(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> Row | None:
    """Why an instance failed, in full: the error its current execution ended
    with, and each activity or sub-orchestration that failed on the way (its
    name, how often it was scheduled, its error's details). None unless the
    current execution is Failed."""
    s = sql.Identifier(schema)
    ended = _rows(
        conn,
        sql.SQL(
            "SELECT e.execution_id, e.output FROM {0}.instances AS i"
            "  JOIN {0}.executions AS e"
            "    ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id"
            " WHERE i.instance_id = %s AND e.status = 'Failed'"
        ).format(s),
        [instance_id],
    )
    if not ended:
        return None
    execution_id = ended[0]["execution_id"]
    query = _FAILED_STEPS.format(schema=s, kinds=sql.Literal(_FAILURE_KINDS))
    steps = _rows(conn, query, {"instance": instance_id, "execution": execution_id})
    ending = [step for step in steps if step["kind"] == "OrchestrationFailed"]
    return {
        "execution_id": execution_id,
        "error": ended[0]["output"],
        "details": ending[-1]["details"] if ending else None,
        "failed_steps": [step for step in steps if step["kind"] != "OrchestrationFailed"],
    }


def requeue_dead_letter(conn: psycopg.Connection[Any], schema: str, dead_letter_id: int) -> int:
    """The dead letter back on its queue as a fresh message: its new id."""
    try:
        row = conn.execute(
            sql.SQL("SELECT {}.taskhub_requeue_dead_letter(%s)").format(sql.Identifier(schema)),
            [dead_letter_id],
        ).fetchone()
    except psycopg.errors.NoDataFound:
        raise RunbookError(f"dead letter {dead_letter_id} not found", code=3) from None
    assert row is not None
    return int(row[0])


def schedules(conn: psycopg.Connection[Any], schema: str) -> list[Row] | None:
    """Every schedule, by name, with its failed fires (taskhub_read_schedules;
    on a hub before revision 0029, taskhub_list_schedules, without them);
    None on a hub from before revision 0027, which has none. `conn` must be
    in autocommit."""
    for function in ("taskhub_read_schedules", "taskhub_list_schedules"):
        try:
            return _rows(
                conn,
                sql.SQL("SELECT * FROM {}.{}()").format(
                    sql.Identifier(schema), sql.Identifier(function)
                ),
            )
        except psycopg.errors.UndefinedFunction:
            continue
    return None


def release_lease(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> None:
    row = conn.execute(
        sql.SQL("SELECT {}.taskhub_release_orchestration_lease(%s)").format(sql.Identifier(schema)),
        [instance_id],
    ).fetchone()
    if not row or not row[0]:
        raise RunbookError(f"instance {instance_id} holds no orchestration lease", code=3)


def release_activity_leases(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> int:
    """Give back at once every activity the instance's workers hold
    (taskhub_release_work_item_lease: no delay to ask for): how many."""
    row = conn.execute(
        sql.SQL(
            "SELECT count(*) FILTER (WHERE released)"
            "  FROM (SELECT {0}.taskhub_release_work_item_lease(q.lock_token) AS released"
            "          FROM {0}.worker_queue AS q"
            "         WHERE q.instance_id = %s AND q.lock_token IS NOT NULL) AS releases"
        ).format(sql.Identifier(schema)),
        [instance_id],
    ).fetchone()
    released = int(row[0]) if row else 0
    if released == 0:
        raise RunbookError(f"instance {instance_id} holds no activity lease", code=3)
    return released


# What the hub's refusal of a message for an instance means on the command
# line: no such instance (P0002), ended (55000), bad input (22023).
_REFUSALS: dict[type[psycopg.Error], int] = {
    psycopg.errors.NoDataFound: 3,
    psycopg.errors.ObjectNotInPrerequisiteState: 1,
    psycopg.errors.InvalidParameterValue: 2,
}


def _send(conn: psycopg.Connection[Any], query: sql.Composed, params: dict[str, Any]) -> str:
    """Run one of the hub's message builders with the caller's W3C trace
    context, if any (as the provider's start and raise_event carry it): the
    status the instance had."""
    context = current_trace_context()
    params = {
        **params,
        "traceparent": context.traceparent if context else None,
        "tracestate": context.tracestate if context else None,
    }
    try:
        row = conn.execute(query, params).fetchone()
    except tuple(_REFUSALS) as error:
        message = error.diag.message_primary or str(error)
        raise RunbookError(message, code=_REFUSALS[type(error)]) from None
    assert row is not None
    return str(row[0])


def cancel_instance(
    conn: psycopg.Connection[Any], schema: str, instance_id: str, reason: str
) -> str:
    """Ask the instance to end as cancelled: taskhub_cancel_instance writes
    the CancelInstance the duroxide client writes. Its status (Running, or
    Pending before its start is taken); RunbookError when it does not exist
    (code 3) or has ended (code 1)."""
    return _send(
        conn,
        sql.SQL(
            "SELECT {}.taskhub_cancel_instance(%(id)s, %(reason)s, %(traceparent)s, %(tracestate)s)"
        ).format(sql.Identifier(schema)),
        {"id": instance_id, "reason": reason},
    )


def raise_event(
    conn: psycopg.Connection[Any], schema: str, instance_id: str, name: str, data: Any
) -> str:
    """Raise an external event: taskhub_raise_event writes the ExternalRaised
    the duroxide client's raise_event writes, with `data` as its JSON text.
    Its status, or RunbookError as cancel_instance."""
    return _send(
        conn,
        sql.SQL(
            "SELECT {}.taskhub_raise_event("
            "%(id)s, %(name)s, %(data)s, %(traceparent)s, %(tracestate)s)"
        ).format(sql.Identifier(schema)),
        {"id": instance_id, "name": name, "data": json_dumps("raise_event", "data", data)},
    )


def pending_instance(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> Row | None:
    """An instance known only by its messages (queued, or moved to the dead
    letters): what they say of it, and why it may not have started. None: no
    trace of it at all."""
    rows = _rows(
        conn,
        sql.SQL(
            "SELECT count(*) FILTER (WHERE source = 'queue') AS queued_messages,"
            "       count(*) FILTER (WHERE source = 'dead letter') AS dead_letters,"
            "       max(attempt_count) FILTER (WHERE source = 'queue') AS max_attempt_count,"
            "       min(created_at) AS first_message_at,"
            "       max(work_item) FILTER (WHERE left(work_item, 22) = '{{\"StartOrchestration\":')"
            "           AS start"
            "  FROM (SELECT 'queue' AS source, attempt_count, created_at, work_item"
            "          FROM {0}.orchestrator_queue WHERE instance_id = %(id)s"
            "        UNION ALL"
            "        SELECT 'dead letter', attempt_count, original_created_at, work_item"
            "          FROM {0}.dead_letters"
            "         WHERE instance_id = %(id)s AND source_queue = 'orchestrator') AS m"
        ).format(sql.Identifier(schema)),
        {"id": instance_id},
    )
    found = rows[0]
    if not found["queued_messages"] and not found["dead_letters"]:
        return None
    start = _start_of(found.pop("start"))
    name = start.get("orchestration")
    return {
        "instance_id": instance_id,
        "status": "Pending",
        "orchestration_name": name,
        "orchestration_version": start.get("version"),
        **found,
        "note": _why_not_started(name, found),
    }


def _start_of(work_item: str | None) -> dict[str, Any]:
    try:
        start = json.loads(work_item)["StartOrchestration"] if work_item else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return start if isinstance(start, dict) else {}


def _why_not_started(name: str | None, found: Row) -> str:
    if found["queued_messages"] == 0:
        return "not started: its messages are in the dead letters (taskhub-pg requeue them)"
    if name is None:
        return "not started: messages wait for it, but none of them starts it"
    deliveries = found["max_attempt_count"] or 0
    if deliveries == 0:
        return "not started yet: no runtime has taken its start"
    return (
        f"not started: its start was handed out {deliveries} times and given back;"
        f" is orchestration {name!r} registered with a runtime on this hub?"
    )


def instance_status(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> str | None:
    """The instance's status as `inspect instances` shows it (Pending: known
    only by its queued messages; Running until its execution row is
    written); None when there is no such instance."""
    rows = _rows(
        conn,
        sql.SQL("SELECT status FROM {}.taskhub_find_instances(p_instance_id => %s)").format(
            sql.Identifier(schema)
        ),
        [instance_id],
    )
    return str(rows[0]["status"] or "Running") if rows else None


def instance_exists(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> bool:
    """Started, or known by queued messages (what delete-instance can delete)."""
    row = conn.execute(
        sql.SQL(
            "SELECT EXISTS (SELECT 1 FROM {0}.instances WHERE instance_id = %(id)s)"
            "    OR EXISTS (SELECT 1 FROM {0}.orchestrator_queue WHERE instance_id = %(id)s)"
        ).format(sql.Identifier(schema)),
        {"id": instance_id},
    ).fetchone()
    return bool(row and row[0])


def count_prune_candidates(
    conn: psycopg.Connection[Any], schema: str, completed_before_ms: int, limit: int
) -> int:
    """How many ended root instances a prune would delete (up to limit): the
    roots taskhub_prune_ended picks (sql/head/management/), counted along the
    same bounded walk of taskhub_instances_created_idx, so that the count
    costs about what it counts, however large the hub."""
    row = conn.execute(
        sql.SQL(
            "SELECT count(*) FROM (SELECT 1 FROM {s}.instances AS i"
            " JOIN {s}.executions AS e"
            "   ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id"
            " WHERE i.created_at < to_timestamp((%(before)s + %(skew)s) / 1000.0)"
            "   AND i.parent_instance_id IS NULL"
            "   AND e.status IN ('Completed', 'Failed', 'ContinuedAsNew')"
            "   AND e.completed_at < to_timestamp(%(before)s / 1000.0)"
            " LIMIT %(limit)s) AS candidates"
        ).format(s=sql.Identifier(schema)),
        {"before": completed_before_ms, "skew": MAX_CLOCK_SKEW_MS, "limit": limit},
    ).fetchone()
    return int(row[0]) if row else 0


def orchestrator_messages(
    conn: psycopg.Connection[Any], schema: str, instance_id: str
) -> list[dict[str, Any]]:
    """The work items on the orchestrator queue for an instance, oldest first."""
    rows = conn.execute(
        sql.SQL(
            "SELECT work_item FROM {}.orchestrator_queue WHERE instance_id = %s ORDER BY id"
        ).format(sql.Identifier(schema)),
        [instance_id],
    ).fetchall()
    return [json.loads(row[0]) for row in rows]


@dataclass(frozen=True)
class Overview:
    """The hub at a glance: what the dashboard's first page shows."""

    queues: list[Row]
    leases: dict[tuple[str, bool], int]
    poison: int
    stuck: int
    dead_letters: int
    shielded: int
    completions_per_minute: list[int]  # oldest minute first, the current one last
    tables: list[Row]  # table_upkeep


def overview(conn: psycopg.Connection[Any], schema: str, minutes: int = 30) -> Overview:
    return Overview(
        queues=queue_health(conn, schema),
        leases=lease_counts(conn, schema),
        poison=count_rows(conn, schema, "poison"),
        stuck=count_rows(conn, schema, "stuck"),
        dead_letters=count_rows(conn, schema, "dead-letters"),
        shielded=count_rows(conn, schema, "shielded"),
        completions_per_minute=completions_per_minute(conn, schema, minutes),
        tables=table_upkeep(conn, schema),
    )


# How long the dashboard may count instances by status: a hub of millions
# shows "too many to count" instead of a page that waits.
STATUS_COUNT_TIMEOUT_MS = 1000


def status_counts(
    conn: psycopg.Connection[Any], schema: str, timeout_ms: int = STATUS_COUNT_TIMEOUT_MS
) -> dict[str, int] | None:
    """Instances by their current execution's status, and Pending ones (known
    only by queued messages), as taskhub_find_instances tells them; None when
    counting takes longer than timeout_ms. `conn` is in autocommit."""
    query = sql.SQL(
        """SELECT e.status, count(*)
             FROM {s}.instances AS i
             JOIN {s}.executions AS e
               ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id
            GROUP BY e.status
           UNION ALL
           SELECT 'Pending', count(DISTINCT q.instance_id)
             FROM {s}.orchestrator_queue AS q
            WHERE NOT EXISTS (SELECT 1 FROM {s}.instances AS i
                               WHERE i.instance_id = q.instance_id)"""
    ).format(s=sql.Identifier(schema))
    try:
        with conn.transaction():
            conn.execute("SELECT set_config('statement_timeout', %s, true)", [f"{timeout_ms}ms"])
            rows = conn.execute(query).fetchall()
    except psycopg.errors.QueryCanceled:
        return None
    return {str(status): int(count) for status, count in rows}


def completions_per_minute(conn: psycopg.Connection[Any], schema: str, minutes: int) -> list[int]:
    """Executions that ended in each of the last `minutes` minutes, the
    current one last (one pass over the window's rows, by minute)."""
    rows = conn.execute(
        sql.SQL(
            "SELECT (extract(epoch FROM date_trunc('minute', now())"
            "                        - date_trunc('minute', completed_at)) / 60)::int,"
            "       count(*)"
            "  FROM {}.executions"
            " WHERE completed_at >= date_trunc('minute', now()) - %s * interval '1 minute'"
            " GROUP BY 1"
        ).format(sql.Identifier(schema)),
        [minutes - 1],
    ).fetchall()
    ago = {int(minute): int(count) for minute, count in rows}
    return [ago.get(minutes - 1 - n, 0) for n in range(minutes)]


def history_of(
    conn: psycopg.Connection[Any], schema: str, instance_id: str, limit: int = 1_000
) -> list[Row]:
    """An instance's events, every execution, in order: each event's text
    whole up to 20,000 characters (the timeline reads its type, name, time
    and source from it), and its first 400 characters in any case."""
    return _rows(
        conn,
        sql.SQL(
            "SELECT execution_id, event_id, event_type, created_at,"
            "       left(event_data, 400) AS event_head,"
            "       CASE WHEN length(event_data) <= 20000 THEN event_data END AS event_data"
            "  FROM {}.history WHERE instance_id = %s"
            " ORDER BY execution_id, event_id LIMIT %s"
        ).format(sql.Identifier(schema)),
        [instance_id, limit],
    )


def kv_of(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> list[Row]:
    return _rows(
        conn,
        sql.SQL(
            "SELECT key, left(value, 400) AS value, execution_id FROM {}.kv_store"
            " WHERE instance_id = %s ORDER BY key"
        ).format(sql.Identifier(schema)),
        [instance_id],
    )


def children_of(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> list[Row]:
    return _rows(
        conn,
        sql.SQL(
            "SELECT instance_id, orchestration_name, created_at FROM {}.instances"
            " WHERE parent_instance_id = %s ORDER BY created_at, instance_id LIMIT 200"
        ).format(sql.Identifier(schema)),
        [instance_id],
    )


def trace_id_of(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> str | None:
    """The W3C trace id the instance's work continues (its own context, else
    its nearest traced ancestor's); None without one, or on a hub older than
    revision 0019, which keeps none."""
    function = f"{quote_schema(schema)}.taskhub_trace_context(text)"
    found = conn.execute("SELECT to_regprocedure(%s) IS NOT NULL", [function]).fetchone()
    if not (found and found[0]):
        return None
    rows = _rows(
        conn,
        sql.SQL("SELECT traceparent FROM {}.taskhub_trace_context(%s)").format(
            sql.Identifier(schema)
        ),
        [instance_id],
    )
    return str(rows[0]["traceparent"]).split("-")[1] if rows else None


def executable(conn: psycopg.Connection[Any], schema: str, functions: list[str]) -> set[str]:
    """Which of the hub's functions the connected role may execute (every
    overload of a name counts: one is enough for the operator's calls)."""
    rows = conn.execute(
        "SELECT DISTINCT p.proname FROM pg_catalog.pg_proc AS p"
        " WHERE p.pronamespace = to_regnamespace(%s) AND p.proname = ANY(%s)"
        "   AND has_function_privilege(p.oid, 'EXECUTE')",
        [f'"{schema}"', functions],
    ).fetchall()
    return {str(name) for (name,) in rows}
