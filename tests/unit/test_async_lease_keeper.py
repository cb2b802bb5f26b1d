"""AsyncLeaseKeeper: the RenewalSchedule of the threaded keeper, as an asyncio
task. Renewal at a third of the lock, transient errors retried within the
lease, the token cancelled when the lease is lost. No database; a 300 ms lock,
so the whole file takes about a second. Real time, not a fake clock: a
`timing` test, run after the parallel part, when the machine is quiet."""

from __future__ import annotations

import asyncio
import time

import pytest

from provider import AsyncLeaseKeeper, CancellationToken, LockLost, RetryableError

pytestmark = pytest.mark.timing

LOCK_MS = 300  # renew every 100 ms, give up 50 ms before the end


class ScriptedRenewals:
    """Renewals that succeed (None) or raise, in order; then they succeed."""

    def __init__(self, script: list[Exception | None]) -> None:
        self.script = script
        self.calls: list[float] = []
        self.started = time.monotonic()

    async def __call__(self, extend_ms: int, timeout_s: float) -> int:
        self.calls.append(time.monotonic() - self.started)
        outcome = self.script.pop(0) if self.script else None
        if outcome is not None:
            raise outcome
        return 0


def keep_for(
    seconds: float, renew: ScriptedRenewals, lock_ms: int = LOCK_MS
) -> tuple[AsyncLeaseKeeper, CancellationToken]:
    token = CancellationToken()

    async def main() -> AsyncLeaseKeeper:
        async with AsyncLeaseKeeper(renew, lock_ms, name="unit", token=token) as keeper:
            await asyncio.sleep(seconds)
        return keeper

    return asyncio.run(main()), token


def test_it_renews_every_third_of_the_lock_while_the_work_runs() -> None:
    renew = ScriptedRenewals([])
    keeper, token = keep_for(0.75, renew)
    assert 5 <= keeper.renewals <= 8 and not keeper.lost and not token.cancelled
    assert 0.08 <= renew.calls[0] <= 0.2


def test_transient_errors_are_retried_within_the_lease() -> None:
    # 600 ms lock: renewals due at 200 ms; two failures, retried at 300 and 500 ms.
    errors: list[Exception | None] = [RetryableError("renew", "connection lost")] * 2
    keeper, token = keep_for(1.0, ScriptedRenewals(errors), lock_ms=600)
    assert keeper.transient_errors == 2 and keeper.renewals >= 2
    assert not keeper.lost and not token.cancelled


def test_a_lost_lease_cancels_the_token() -> None:
    keeper, token = keep_for(0.4, ScriptedRenewals([LockLost("renew", "taken over")]))
    assert keeper.lost and token.cancelled
    assert "taken over" in (keeper.lost_reason or "")


def test_errors_until_the_margin_give_the_lease_up_in_time() -> None:
    errors: list[Exception | None] = [RetryableError("renew", "down")] * 100
    keeper, token = keep_for(0.6, ScriptedRenewals(errors))
    assert keeper.lost and token.cancelled
    assert "ran out" in (keeper.lost_reason or "")
