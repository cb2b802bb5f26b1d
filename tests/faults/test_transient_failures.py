"""A transient database failure never fails an orchestration.

When an ack fails, the duroxide runtime acks again, with the same token, a
turn that ends the orchestration with OrchestrationFailed(Infrastructure),
and it does so for errors it wrongly takes as permanent: a terminated
backend, a statement timeout, a serialization failure. The failed ack rolled
back, so ack_orchestration_item gives such a turn back for redelivery
instead of committing it, and logs it in shielded_failures. Everything else
(application, poison and configuration failures, infrastructure failures
that do not pass) commits as before.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from devkit.waiting import wait_until
from devkit.workloads.work_items import event, orchestration_started, start_orchestration
from provider import ExecutionMetadata, now_ms
from provider.shapes import ack_metadata_json, history_rows
from tests.support.server_clock import advance_clock

RUNTIME_PREFIX = "Database error: error returned from database: "
TERMINATED = RUNTIME_PREFIX + "terminating connection due to administrator command"

# Rows as a test reads them back.
Row = tuple[Any, ...]


def failed_event(event_id: int, instance: str, details: dict[str, Any]) -> dict[str, Any]:
    return event(event_id, instance, "OrchestrationFailed", details=details)


def infrastructure(operation: str, message: str) -> dict[str, Any]:
    return {"Infrastructure": {"operation": operation, "message": message, "retryable": False}}


class Turns:
    """Enqueue, fetch and ack turns by plain SQL, as any runtime would."""

    def __init__(self, conn: psycopg.Connection[Any], schema: str) -> None:
        self.conn, self.q = conn, f'"{schema}"'

    def start(self, instance: str) -> None:
        self.conn.execute(
            f"SELECT {self.q}.enqueue_orchestrator_work(%s, %s, now())",
            [instance, json.dumps(start_orchestration(instance))],
        )

    def fetch(self, lock_timeout_ms: int = 30_000) -> Row | None:
        return self.conn.execute(
            f"SELECT out_instance_id, out_lock_token, out_attempt_count, out_messages"
            f" FROM {self.q}.fetch_orchestration_item(%s, %s)",
            [now_ms(), lock_timeout_ms],
        ).fetchone()

    def ack_failure(self, token: str, instance: str, details: dict[str, Any]) -> None:
        """The runtime's failure turn: the original (empty) history plus
        OrchestrationStarted and OrchestrationFailed."""
        events = [orchestration_started(instance), failed_event(2, instance, details)]
        meta = ExecutionMetadata(
            status="Failed",
            output="failed",
            orchestration_name="TestOrch",
            orchestration_version="1.0.0",
        )
        self.conn.execute(
            f"SELECT {self.q}.ack_orchestration_item(%s, %s, 1, %s, '[]', '[]', %s, '[]')",
            [
                token,
                now_ms(),
                json.dumps(history_rows(events)),
                json.dumps(ack_metadata_json(meta, events)),
            ],
        )

    def status(self, instance: str) -> str | None:
        row = self.conn.execute(
            f"SELECT status FROM {self.q}.executions WHERE instance_id = %s", [instance]
        ).fetchone()
        return None if row is None else str(row[0])

    def history_count(self, instance: str) -> int:
        row = self.conn.execute(
            f"SELECT count(*) FROM {self.q}.history WHERE instance_id = %s", [instance]
        ).fetchone()
        assert row is not None
        return int(row[0])

    def fetch_when_visible(self, timeout_s: float = 10.0) -> Row:
        return wait_until(self.fetch, timeout_s=timeout_s, message="a turn to become visible")


@pytest.mark.pins_defect(
    "duroxide-pg and revision 0006 commit the recorded failure: the orchestration stays Failed",
    fails_on=("duroxide-0.2.2", "taskhub-0006"),
)
def test_a_recorded_transient_failure_gives_the_turn_back(
    flavour_schema: str, sql: psycopg.Connection[Any]
) -> None:
    turns = Turns(sql, flavour_schema)
    turns.start("shielded")
    first = turns.fetch()
    assert first is not None and first[2] == 1
    turns.ack_failure(first[1], "shielded", infrastructure("ack_orchestration_item", TERMINATED))

    assert turns.status("shielded") is None
    assert turns.history_count("shielded") == 0
    again = turns.fetch_when_visible()
    assert again[0] == "shielded" and again[2] == 2
    assert again[3] == first[3]


def test_the_shielded_failure_is_visible_to_operators_and_logged(
    hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    notices: list[str] = []
    sql.add_notice_handler(lambda diag: notices.append(str(diag.message_primary)))
    sql.execute("SET client_min_messages = log")
    turns = Turns(sql, hub_schema)
    turns.start("seen")
    first = turns.fetch()
    assert first is not None
    turns.ack_failure(first[1], "seen", infrastructure("ack_orchestration_item", TERMINATED))

    row = sql.execute(
        f"SELECT instance_id, execution_id, operation, condition, message, attempt_count,"
        f' retry_after_ms, shielded_at <= now() FROM "{hub_schema}".shielded_failures'
    ).fetchone()
    assert row == (
        "seen",
        1,
        "ack_orchestration_item",
        "admin_shutdown",
        TERMINATED,
        1,
        100,
        True,
    )
    assert any("seen" in notice and "given back" in notice for notice in notices), notices


def test_each_redelivery_counts_so_a_turn_that_keeps_failing_is_dead_lettered(
    hub_schema: str, sql: psycopg.Connection[Any], database_url: str
) -> None:
    sql.execute(
        f"UPDATE \"{hub_schema}\".taskhub_settings SET value = '3'"
        " WHERE name = 'dead_letter_after_attempts'"
    )
    turns = Turns(sql, hub_schema)
    turns.start("doomed")
    attempts = []
    for _ in range(3):
        instance, token, attempt, _ = turns.fetch_when_visible()
        attempts.append(attempt)
        turns.ack_failure(token, instance, infrastructure("ack_orchestration_item", TERMINATED))
    assert attempts == [1, 2, 3]
    advance_clock(database_url, hub_schema, 500)  # past the 400 ms the give-back holds it
    assert turns.fetch() is None
    dead = sql.execute(
        f'SELECT instance_id, attempt_count FROM "{hub_schema}".dead_letters'
    ).fetchall()
    assert dead == [("doomed", 3)]


NOT_SHIELDED = {
    "application failure": {
        "Application": {
            "kind": "OrchestrationFailed",
            "message": "deadlock detected",
            "retryable": False,
        }
    },
    "poison": {
        "Poison": {
            "attempt_count": 11,
            "max_attempts": 10,
            "message_type": {"Orchestration": {"instance": "x", "execution_id": 1}},
            "message": "terminating connection due to administrator command",
        }
    },
    "configuration": {
        "Configuration": {"kind": "Nondeterminism", "resource": "x", "message": "deadlock detected"}
    },
    "invalid lock token": infrastructure("ack_orchestration_item", "Invalid lock token"),
    "duplicate event": infrastructure(
        "ack_orchestration_item",
        RUNTIME_PREFIX + 'duplicate key value violates unique constraint "history_pkey"',
    ),
    "permission denied": infrastructure(
        "ack_orchestration_item", RUNTIME_PREFIX + "permission denied for table history"
    ),
    "not a provider operation": infrastructure("validate_limits", TERMINATED),
}


@pytest.mark.parametrize("details", NOT_SHIELDED.values(), ids=NOT_SHIELDED.keys())
def test_failures_that_do_not_pass_are_committed_as_before(
    hub_schema: str, sql: psycopg.Connection[Any], details: dict[str, Any]
) -> None:
    turns = Turns(sql, hub_schema)
    turns.start("failed")
    first = turns.fetch()
    assert first is not None
    turns.ack_failure(first[1], "failed", details)
    assert turns.status("failed") == "Failed"
    assert turns.history_count("failed") == 2
    assert sql.execute(f'SELECT count(*) FROM "{hub_schema}".shielded_failures').fetchone() == (0,)


def test_the_record_policy_turns_the_shield_off(
    hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    sql.execute(
        f"UPDATE \"{hub_schema}\".taskhub_settings SET value = 'record'"
        " WHERE name = 'transient_failure_policy'"
    )
    turns = Turns(sql, hub_schema)
    turns.start("recorded")
    first = turns.fetch()
    assert first is not None
    turns.ack_failure(first[1], "recorded", infrastructure("ack_orchestration_item", TERMINATED))
    assert turns.status("recorded") == "Failed"


def test_a_policy_other_than_retry_or_record_is_refused(
    hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        sql.execute(
            f"UPDATE \"{hub_schema}\".taskhub_settings SET value = 'sometimes'"
            " WHERE name = 'transient_failure_policy'"
        )
    sql.rollback()
    row = sql.execute(
        f'SELECT value FROM "{hub_schema}".taskhub_settings'
        " WHERE name = 'transient_failure_policy'"
    ).fetchone()
    assert row == ("retry",)


# --- The list of transient conditions, against what real servers say. -----


def server_error(conn: psycopg.Connection[Any], statement: str) -> str:
    """The message the server sends when `statement` fails on `conn`."""
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(statement)
    if not conn.closed:
        conn.rollback()
    return str(caught.value.diag.message_primary or caught.value).strip()


def backend_gone(admin: psycopg.Connection[Any], pid: int) -> bool:
    row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    return row == (0,)


def terminated_backend(url: str) -> str:
    with psycopg.connect(url) as victim, psycopg.connect(url, autocommit=True) as admin:
        pid = victim.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s)", [pid])
        wait_until(lambda: backend_gone(admin, pid), message=f"backend {pid} to exit")
        return server_error(victim, "SELECT 1")


def statement_timeout(url: str) -> str:
    with psycopg.connect(url) as conn:
        conn.execute("SET statement_timeout = 20")
        return server_error(conn, "SELECT pg_sleep(5)")


def running_pg_sleep(admin: psycopg.Connection[Any], pid: int) -> bool:
    row = admin.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE pid = %s AND state = 'active' AND query LIKE 'SELECT pg_sleep%%'",
        [pid],
    ).fetchone()
    return row == (1,)


def cancelled_by_an_operator(url: str) -> str:
    with psycopg.connect(url) as conn, psycopg.connect(url, autocommit=True) as admin:
        pid = conn.info.backend_pid

        def cancel_once_it_runs() -> None:
            wait_until(lambda: running_pg_sleep(admin, pid), timeout_s=4)
            admin.execute("SELECT pg_cancel_backend(%s)", [pid])

        canceller = threading.Thread(target=cancel_once_it_runs)
        canceller.start()
        try:
            return server_error(conn, "SELECT pg_sleep(5)")
        finally:
            canceller.join()


def with_a_locked_row(url: str, statement: Callable[[psycopg.Connection[Any]], str]) -> str:
    with psycopg.connect(url) as holder, psycopg.connect(url) as waiter:
        holder.execute("CREATE TABLE IF NOT EXISTS transient_probe (id int PRIMARY KEY)")
        holder.execute("INSERT INTO transient_probe VALUES (1) ON CONFLICT DO NOTHING")
        holder.commit()
        holder.execute("SELECT * FROM transient_probe WHERE id = 1 FOR UPDATE")
        return statement(waiter)


def lock_timeout(url: str) -> str:
    def wait(conn: psycopg.Connection[Any]) -> str:
        conn.execute("SET lock_timeout = 20")
        return server_error(conn, "SELECT * FROM transient_probe WHERE id = 1 FOR UPDATE")

    return with_a_locked_row(url, wait)


def lock_not_available(url: str) -> str:
    return with_a_locked_row(
        url,
        lambda conn: server_error(
            conn, "SELECT * FROM transient_probe WHERE id = 1 FOR UPDATE NOWAIT"
        ),
    )


def serialization_failure(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS transient_probe (id int PRIMARY KEY)")
        setup.execute("INSERT INTO transient_probe VALUES (1) ON CONFLICT DO NOTHING")
    with psycopg.connect(url) as first, psycopg.connect(url) as second:
        for conn in (first, second):
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            conn.execute("SELECT * FROM transient_probe")
        first.execute("UPDATE transient_probe SET id = id WHERE id = 1")
        first.commit()
        return server_error(second, "UPDATE transient_probe SET id = id WHERE id = 1")


def deadlock(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as setup:
        setup.execute("CREATE TABLE IF NOT EXISTS transient_pair (id int PRIMARY KEY)")
        setup.execute("INSERT INTO transient_pair VALUES (1), (2) ON CONFLICT DO NOTHING")
    messages: list[str] = []
    with psycopg.connect(url) as first, psycopg.connect(url) as second:
        first.execute("SELECT * FROM transient_pair WHERE id = 1 FOR UPDATE")
        second.execute("SELECT * FROM transient_pair WHERE id = 2 FOR UPDATE")

        def cross(conn: psycopg.Connection[Any], row: int) -> None:
            try:
                conn.execute("SELECT * FROM transient_pair WHERE id = %s FOR UPDATE", [row])
            except psycopg.Error as error:
                messages.append(str(error.diag.message_primary))
            conn.rollback()

        threads = [
            threading.Thread(target=cross, args=(first, 2)),
            threading.Thread(target=cross, args=(second, 1)),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return messages[0]


def read_only_transaction(url: str) -> str:
    with psycopg.connect(url) as conn:
        conn.execute("SET TRANSACTION READ ONLY")
        return server_error(conn, "CREATE TABLE read_only_probe (id int)")


def too_many_connections(url: str) -> str:
    role = f"transient_limited_{secrets.token_hex(5)}"  # ours alone: dropped afterwards
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN CONNECTION LIMIT 0")
        try:
            limited = make_conninfo(url, user=role)
            with pytest.raises(psycopg.OperationalError) as caught:
                psycopg.connect(limited)
            # What the server said, without libpq's "connection to server ... failed".
            return str(caught.value).split("FATAL:", 1)[-1].strip()
        finally:
            admin.execute(f"DROP ROLE {role}")


def protocol_error(url: str, steps: list[tuple[str, bytes, list[bytes]]]) -> str:
    """What the server says to the last of `steps` (prepare or execute of a
    named statement, at the protocol level, as the runtime's driver does
    them): what a transaction pooler makes of named statements when it hands
    them to another server connection."""
    with psycopg.connect(url) as conn:
        message = ""
        for step, name, values in steps:
            if step == "prepare":
                result = conn.pgconn.prepare(name, b"SELECT $1::int")
            else:
                result = conn.pgconn.exec_prepared(name, values)
            primary = result.error_field(psycopg.pq.DiagnosticField.MESSAGE_PRIMARY)
            message = (primary or b"").decode()
        return message


def prepared_statement_missing(url: str) -> str:
    return protocol_error(url, [("execute", b"sqlx_s_14", [b"1"])])


def prepared_statement_taken(url: str) -> str:
    return protocol_error(url, [("prepare", b"sqlx_s_3", []), ("prepare", b"sqlx_s_3", [])])


def bind_to_another_statement(url: str) -> str:
    return protocol_error(
        url, [("prepare", b"sqlx_s_14", []), ("execute", b"sqlx_s_14", [b"1", b"2", b"3"])]
    )


REAL_SERVER_MESSAGES: dict[str, Callable[[str], str]] = {
    "pooled_prepared_statement": prepared_statement_missing,
    "admin_shutdown": terminated_backend,
    "statement_timeout": statement_timeout,
    "lock_timeout": lock_timeout,
    "serialization_failure": serialization_failure,
    "deadlock": deadlock,
    "read_only_transaction": read_only_transaction,
    "too_many_connections": too_many_connections,
}


def classify(conn: psycopg.Connection[Any], schema: str, message: str) -> str | None:
    row = conn.execute(f'SELECT "{schema}".taskhub_transient_condition(%s)', [message]).fetchone()
    assert row is not None
    return None if row[0] is None else str(row[0])


@pytest.mark.parametrize("condition", REAL_SERVER_MESSAGES)
def test_each_transient_condition_matches_what_the_server_says(
    condition: str, hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    message = REAL_SERVER_MESSAGES[condition](database_url)
    assert classify(sql, hub_schema, RUNTIME_PREFIX + message) == condition, message


@pytest.mark.parametrize(
    ("produce", "condition"),
    [
        (cancelled_by_an_operator, "statement_timeout"),
        (lock_not_available, "lock_timeout"),
        (prepared_statement_taken, "pooled_prepared_statement"),
        (bind_to_another_statement, "pooled_prepared_statement"),
    ],
)
def test_other_ways_to_a_condition_match_too(
    produce: Callable[[str], str],
    condition: str,
    hub_schema: str,
    database_url: str,
    sql: psycopg.Connection[Any],
) -> None:
    message = produce(database_url)
    assert classify(sql, hub_schema, RUNTIME_PREFIX + message) == condition, message


# Messages that cannot be provoked safely in a test, as PostgreSQL 15's
# sources word them and as the runtime's driver (sqlx) reports them.
KNOWN_MESSAGES = {
    "crash_shutdown": "terminating connection because of crash of another server process",
    "cannot_connect_now": "the database system is starting up",
    "idle_timeout": "terminating connection due to idle-in-transaction timeout",
    "connection_failure": (
        "error communicating with database: Connection reset by peer (os error 104)"
    ),
    "disk_full": 'could not extend file "base/16384/16385": No space left on device',
    "out_of_memory": "out of memory",
}


@pytest.mark.parametrize("condition", KNOWN_MESSAGES)
def test_conditions_that_cannot_be_provoked_match_their_known_messages(
    condition: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    assert classify(sql, hub_schema, RUNTIME_PREFIX + KNOWN_MESSAGES[condition]) == condition


@pytest.mark.parametrize(
    "message",
    [
        "Invalid lock token",
        'duplicate key value violates unique constraint "history_pkey"',
        "permission denied for table history",
        'relation "history" does not exist',
        "value too long for type character varying(10)",
        "history size 12000000 bytes exceeds the limit",
    ],
)
def test_errors_that_do_not_pass_are_not_transient(
    message: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    assert classify(sql, hub_schema, RUNTIME_PREFIX + message) is None
