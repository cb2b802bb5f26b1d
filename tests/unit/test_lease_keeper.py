"""The lease keeper's timing, with a fake clock: renewal at a third of the
lock, back-off on transient errors, and giving up a margin before the lease
would end. No database and no waiting."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest

from provider import LeaseKeeper, LockLost, PermanentError, RetryableError
from provider.worker.renewal import RENEWAL_BACKOFF

LOCK_MS = 3_000  # renew every 1 s, give up 300 ms before the end


@dataclass
class FakeClock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.now += seconds
        return False  # never stopped: the keeper ends by losing the lease


@dataclass
class ScriptedRenewals:
    """Renewals that succeed, or raise the scripted error, in order; then a lost lease."""

    clock: FakeClock
    script: list[Exception | None]
    calls: list[float] = field(default_factory=list)

    def __call__(self, extend_ms: int, timeout_s: float) -> int:
        self.calls.append(round(self.clock.now - 100.0, 3))
        outcome = self.script.pop(0) if self.script else LockLost("renew", "gone")
        if outcome is not None:
            raise outcome
        return int(self.clock.now * 1000) + extend_ms


def run_keeper(script: list[Exception | None]) -> tuple[LeaseKeeper, ScriptedRenewals]:
    clock = FakeClock()
    renewals = ScriptedRenewals(clock, script)
    keeper = LeaseKeeper(renewals, LOCK_MS, name="test", clock=clock, wait=clock.wait)
    keeper._run()  # in this thread: the fake clock makes it return at once
    return keeper, renewals


def transient() -> RetryableError:
    return RetryableError("renew", "server restarting", "57P03")


def test_renews_every_third_of_the_lock() -> None:
    keeper, renewals = run_keeper([None, None, None])
    assert renewals.calls == [1.0, 2.0, 3.0, 4.0]
    assert keeper.renewals == 3 and keeper.lost_reason is not None
    assert "lease lost" in keeper.lost_reason and keeper.token.cancelled


def backed_off(calls: list[float], until: float) -> bool:
    """Each retry after the n-th failure in a row came within the jitter of
    RENEWAL_BACKOFF's n-th pause, or at `until` when that came first."""
    pauses = [later - earlier for earlier, later in itertools.pairwise(calls)]
    for failures, (pause, at) in enumerate(zip(pauses, calls[1:], strict=True), start=1):
        ceiling = RENEWAL_BACKOFF.ceiling_s(failures)
        if not (ceiling / 2 - 1e-9 <= pause <= ceiling + 1e-9 or abs(at - until) < 1e-9):
            return False
    return True


def test_transient_errors_back_off_and_give_up_a_margin_before_the_end() -> None:
    keeper, renewals = run_keeper([transient()] * 20)
    # 1 s, then back-off of about 0.1, 0.2, 0.4, 0.8 s (with jitter), capped
    # by what is left before the margin (the lease ends at 3.0 s, the margin
    # is 0.3 s).
    assert renewals.calls[0] == 1.0 and backed_off(renewals.calls, until=2.7)
    assert renewals.calls[-1] < 2.7 and 4 <= len(renewals.calls) <= 8
    assert keeper.transient_errors == len(renewals.calls) and keeper.renewals == 0
    assert keeper.lost_reason is not None and "ran out" in keeper.lost_reason


def test_a_renewal_after_transient_errors_extends_from_when_it_was_sent() -> None:
    keeper, renewals = run_keeper([transient(), transient(), None])
    assert renewals.calls[0] == 1.0 and backed_off(renewals.calls[:3], until=2.7)
    assert renewals.calls[3] == pytest.approx(renewals.calls[2] + 1.0)
    assert keeper.renewals == 1 and keeper.transient_errors == 2


def test_a_permanent_error_cancels_the_work_at_once() -> None:
    keeper, renewals = run_keeper([PermanentError("renew", "schema missing", "42883")])
    assert renewals.calls == [1.0]
    assert keeper.lost_reason == "renewal failed permanently: schema missing"
    assert keeper.token.cancelled
