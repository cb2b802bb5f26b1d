"""The lease a fetch hands out is whole when the row reaches the caller.

fetch_orchestration_item computes the lease end after everything the caller
receives (messages, history, KV) has been read and parsed, so the lease left
at the client is the timeout less the time to send the row, however long the
history took to read. Revision 0005 fixed the lease end when it claimed the
instance, before the history read: under load a dispatcher received a lease
that had already run out. Both tests fail on that revision and on duroxide
0.2.2 (whose lease starts from the caller's clock, before the call).
"""

from __future__ import annotations

import json
import time
from typing import Any

import psycopg
import pytest
from psycopg.types.string import TextLoader

from devkit.workloads.contention import ContentionSettings, run_contention, seed_hot_instances
from provider import now_ms

# Asserts margins of wall-clock time: run alone, after the parallel part of the suite.
pytestmark = pytest.mark.timing

# How much of its own fetch a lease may have lost when the row arrives. Many
# tiny events: reading them costs several times what sending them does, and
# the lease end is fixed after the read, so it loses the send only (a quarter
# to a third of the fetch here). The defect it pins fixes the lease end before
# the read: it loses the whole fetch. Measured against the same fetch, not
# against the lock, whose length came from earlier fetches: on a noisy
# machine one fetch can take half as long again as the ones before it.
LOST_AT_MOST_OF_THE_FETCH = 0.5
BIG_HISTORY_EVENTS = 100_000


def seed_instance_with_a_big_history(conn: psycopg.Connection[Any], schema: str) -> None:
    q = f'"{schema}"'
    conn.execute(
        f"INSERT INTO {q}.instances (instance_id, orchestration_name, orchestration_version,"
        " current_execution_id, created_at, updated_at)"
        " VALUES ('big', 'Big', '1.0.0', 1, now(), now())"
    )
    conn.execute(
        f"INSERT INTO {q}.executions (instance_id, execution_id, status, started_at)"
        " VALUES ('big', 1, 'Running', now())"
    )
    conn.execute(
        f"INSERT INTO {q}.history (instance_id, execution_id, event_id, event_type, event_data,"
        " created_at)"
        " SELECT 'big', 1, g, 'Event', json_build_object('n', g),"
        " now() FROM generate_series(1, %s) AS g",
        [BIG_HISTORY_EVENTS],
    )
    conn.execute(f"ANALYZE {q}.history")
    item = json.dumps({"ExternalRaised": {"instance": "big", "name": "Ping", "data": "{}"}})
    conn.execute(f"SELECT {q}.enqueue_orchestrator_work('big', %s, now())", [item])


def fetch_and_measure(
    conn: psycopg.Connection[Any], schema: str, lock_timeout_ms: int
) -> tuple[str, float, int]:
    """One fetch, receiving the whole row: (token, call time in ms, lease left
    in ms when the row arrived)."""
    started = time.perf_counter()
    row = conn.execute(
        f'SELECT out_lock_token, out_history FROM "{schema}".fetch_orchestration_item(%s, %s)',
        [now_ms(), lock_timeout_ms],
    ).fetchone()
    arrived_ms = now_ms()
    elapsed_ms = (time.perf_counter() - started) * 1000
    assert row is not None
    token = str(row[0])
    lease = conn.execute(
        f'SELECT locked_until FROM "{schema}".instance_locks WHERE lock_token = %s', [token]
    ).fetchone()
    assert lease is not None
    return token, elapsed_ms, int(lease[0]) - arrived_ms


def give_back(conn: psycopg.Connection[Any], schema: str, token: str) -> None:
    conn.execute(
        f'SELECT "{schema}".abandon_orchestration_item(%s, %s, 0, true)', [token, now_ms()]
    )


@pytest.mark.pins_defect(
    "the lease end is fixed before the history is read, or from the caller's clock",
    fails_on=("taskhub-0005", "duroxide-0.2.2"),
)
def test_a_fetch_whose_history_read_takes_a_quarter_of_the_lock_hands_out_a_whole_lease(
    flavour_schema: str, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.adapters.register_loader("jsonb", TextLoader)  # the bytes, not a Python parse
        seed_instance_with_a_big_history(conn, flavour_schema)
        # How long the fetch takes, with a lock long enough not to matter.
        read_ms = []
        for _ in range(3):
            token, elapsed_ms, _ = fetch_and_measure(conn, flavour_schema, 600_000)
            give_back(conn, flavour_schema, token)
            read_ms.append(elapsed_ms)
        # A lock of which the fetch takes a quarter: the history read, all of
        # it before the lease was computed in revision 0005 (which then hands
        # out at most 75 %). A quarter, not more, so that the time to send the
        # row (part of the fetch, and paid by every schema) stays well inside
        # the 10 % allowed; the fastest read, so that a noisy machine cannot
        # make the lock too long to show the defect.
        lock_timeout_ms = max(int(4 * min(read_ms)), 100)

        _, elapsed_ms, left_ms = fetch_and_measure(conn, flavour_schema, lock_timeout_ms)

    lost_ms = lock_timeout_ms - left_ms
    print(
        f"fetches {min(read_ms):.0f} ms, lock {lock_timeout_ms} ms; this fetch"
        f" {elapsed_ms:.0f} ms, its lease lost {lost_ms} ms ({lost_ms / elapsed_ms:.0%})"
    )
    assert lost_ms <= LOST_AT_MOST_OF_THE_FETCH * elapsed_ms


# 4 MB histories. The dispatchers take the row without the history itself:
# sending 4 MB to 16 Python threads sharing 2 cores with the server takes
# longer than 10 % of the lock, and the time to send is the client's. A 3 s
# lock: beside a CPU hog one fetch spent 1.1 s after its lease began, writing
# out its 4 MB row with the cores five times oversubscribed, so a 1 s lease
# had ended 85 ms before the row left the server. What this test pins is
# where in the fetch the lease begins, which a longer lease does not move.
HOT = ContentionSettings(
    dispatchers=16,
    hot_instances=4,
    history_events=2_000,
    event_payload_bytes=2_000,
    lock_timeout_ms=3_000,
    duration_s=4.0,
)
# Where, in a fetch's own time by the server's clock (statement start to the
# row leaving the function), its lease begins. Head computes it after reading
# the history: at 0.43-0.55 of the fetch at the earliest here, its tenth
# earliest fetch near 0.65. Beside a CPU hog the output built after the lease
# slows as much as the read, and a fetch that loses its core just after the
# lease begins it early: 0.33, once 0.14 in 122 fetches. So the test judges
# the tenth of the fetches that began their lease earliest, not the single
# earliest. The defect (0005, the lease end fixed before the history is read)
# begins it at 0.0 in every fetch. duroxide 0.2.2 begins it early only in the
# fetch that waited in its convoy (0.03, one in 40), and fails here on its
# deadlocks (20-34 in 4 s); its lease from the caller's clock fails the big
# history's test above. In milliseconds left head and the defect overlap on a
# loaded machine: head handed out 581 ms of the 1,000 beside a CPU hog, as a
# slow server builds its 4 MB of output after the lease.
LEASE_BEGINS_AFTER = 0.15


@pytest.mark.pins_defect(
    "the lease end is fixed before the history is read (0005); fetches convoy and deadlock (0.2.2)",
    fails_on=("taskhub-0005", "duroxide-0.2.2"),
)
def test_sixteen_dispatchers_on_hot_instances_get_leases_begun_after_the_read(
    flavour_schema: str, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        seed_hot_instances(conn, flavour_schema, HOT)

    result = run_contention(database_url, flavour_schema, HOT)

    print(result.summary())
    assert result.turns > 0
    assert result.lease_position(0.1) >= LEASE_BEGINS_AFTER
    assert result.expired_leases == 0
    assert result.ack_failures == 0
    assert result.errors == 0
