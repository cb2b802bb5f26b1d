"""Backoff, the one home of every retry's pause (provider/backoff.py): it
doubles from the first pause to the cap, never further; with jitter each
pause is drawn from the upper part of its ceiling, so that a fleet that
failed together spreads out; without it, it is exact. The workers' fetch
after an error and the renewal's retry take their pauses from it."""

from __future__ import annotations

import random

import pytest

from provider.backoff import Backoff
from provider.config import TaskHubConfig
from provider.errors import InvalidInput, RetryableError
from provider.worker.core import WorkerCore
from provider.worker.renewal import RENEWAL_BACKOFF, RenewalSchedule


def test_it_doubles_from_the_first_pause_up_to_the_cap() -> None:
    backoff = Backoff(first_s=0.1, cap_s=1.0, jitter=0.0)
    assert [backoff.pause_s(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff.pause_s(10_000) == 1.0  # no overflow however long the outage


def test_jitter_draws_each_pause_from_the_upper_half_of_its_ceiling() -> None:
    backoff = Backoff(first_s=0.1, cap_s=5.0)
    rng = random.Random(7)
    for failures in range(1, 12):
        ceiling = backoff.ceiling_s(failures)
        pauses = [backoff.pause_s(failures, rng) for _ in range(200)]
        assert all(ceiling / 2 <= pause <= ceiling for pause in pauses)
        assert max(pauses) - min(pauses) > ceiling / 4  # spread, not one value


def test_a_fleet_that_failed_together_does_not_retry_in_step() -> None:
    """Ten workers, the same outage: their fifth pauses differ (the defect of
    issue 40: min(error_s * 2, ...) gave all ten the same 1.6 s)."""
    backoff = Backoff(first_s=0.1, cap_s=5.0)
    fifth = {round(backoff.pause_s(5, random.Random(worker)), 3) for worker in range(10)}
    assert len(fifth) == 10


@pytest.mark.parametrize(
    ("first_s", "cap_s", "jitter"), [(0.0, 1.0, 0.5), (2.0, 1.0, 0.5), (0.1, 1.0, 1.5)]
)
def test_a_backoff_that_cannot_work_is_refused(first_s: float, cap_s: float, jitter: float) -> None:
    with pytest.raises(ValueError):
        Backoff(first_s, cap_s, jitter)


def test_a_worker_backs_off_its_fetch_from_100_ms_to_its_cap_with_jitter() -> None:
    core = WorkerCore(
        TaskHubConfig("postgresql://nowhere/db", schema="s"), max_error_backoff_ms=2_000
    )
    assert [core.error_backoff.ceiling_s(n) for n in range(1, 7)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0]
    assert core.error_backoff.jitter > 0
    assert [core.idle_backoff.pause_s(n) for n in range(1, 7)] == [
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.5,
    ]


def test_a_worker_refuses_polling_settings_that_cannot_work() -> None:
    with pytest.raises(InvalidInput, match="idle_poll_ms"):
        WorkerCore(TaskHubConfig("postgresql://nowhere/db", schema="s"), idle_poll_ms=0)
    with pytest.raises(InvalidInput, match="idle_poll_ms"):
        WorkerCore(
            TaskHubConfig("postgresql://nowhere/db", schema="s"),
            idle_poll_ms=600,
            max_idle_poll_ms=500,
        )


def test_a_failed_renewal_is_retried_soon_and_never_after_the_lease_can_be_saved() -> None:
    schedule = RenewalSchedule.starting(30_000, leased_at=100.0, now=100.0)
    transient = RetryableError("renew_work_item_lock", "connection lost", "08006")
    assert schedule.failed(transient, now=101.0) is None
    assert 101.0 + 0.05 <= schedule.next_renewal <= 101.0 + RENEWAL_BACKOFF.ceiling_s(1)
    for _ in range(10):
        assert schedule.failed(transient, now=101.0) is None
    assert schedule.next_renewal <= 101.0 + schedule.interval_s
    # Near the end of the lease: at once, before the margin runs out.
    assert schedule.failed(transient, now=schedule.deadline - schedule.margin_s) is None
    assert schedule.next_renewal == schedule.deadline - schedule.margin_s
