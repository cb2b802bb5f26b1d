"""Seed reproduction B: many dispatchers on a few hot instances with large
histories and a 1 s lock timeout. No expired lease is ever handed out, no ack
fails, nothing deadlocks, and attempt counts stay bounded."""

from __future__ import annotations

import psycopg
import pytest

from devkit.workloads.contention import ContentionSettings, run_contention, seed_hot_instances

# Asserts margins of wall-clock time: run alone, after the parallel part of the suite.
pytestmark = pytest.mark.timing

SETTINGS = ContentionSettings(
    dispatchers=16,
    hot_instances=4,
    history_events=2_000,
    lock_timeout_ms=1_000,
    duration_s=4.0,
)


@pytest.mark.pins_defect(
    "fetches convoy on one advisory key, deadlock and stall (seed report, reproduction B)",
    fails_on=("duroxide-0.2.2",),
)
def test_contended_dispatchers_never_get_dead_leases_or_deadlocks(
    flavour_schema: str, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        seed_hot_instances(conn, flavour_schema, SETTINGS)

    result = run_contention(database_url, flavour_schema, SETTINGS)

    print(result.summary())
    assert result.other_errors == []
    assert result.deadlocks == 0
    assert result.timeouts == 0
    assert result.expired_leases == 0
    assert result.ack_failures == 0
    # Every fetch is the first attempt of its messages, give or take a retry.
    assert result.max_attempt_count <= 2
    # The hub keeps serving all hot instances: at least a turn per instance per 200 ms.
    assert result.turns >= SETTINGS.hot_instances * SETTINGS.duration_s * 5
