"""AsyncLeaseKeeper: the RenewalSchedule of the threaded keeper, as an asyncio
task. Renewal at a third of the lock, transient errors retried within the
lease, the token cancelled when the lease is lost. No database and no
waiting: a fake clock that the keeper's sleeps move on, as the threaded
keeper's unit test does."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from provider import AsyncLeaseKeeper, CancellationToken, LockLost, RetryableError

LOCK_MS = 300  # renew every 100 ms, give up 50 ms before the end


@dataclass
class FakeClock:
    now: float = 100.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds
        await asyncio.sleep(0)  # let the work look at the clock

    async def work_until(self, seconds: float, token: CancellationToken) -> None:
        """Work that ends once the clock reached `seconds` past its start, or
        when its token is cancelled (the clock stands still once the keeper
        gave up)."""
        end = 100.0 + seconds
        while self.now < end and not token.cancelled:
            await asyncio.sleep(0)


@dataclass
class ScriptedRenewals:
    """Renewals that succeed (None) or raise, in order; then they succeed."""

    clock: FakeClock
    script: list[Exception | None]
    calls: list[float] = field(default_factory=list)

    async def __call__(self, extend_ms: int, timeout_s: float) -> int:
        self.calls.append(round(self.clock.now - 100.0, 3))
        outcome = self.script.pop(0) if self.script else None
        if outcome is not None:
            raise outcome
        return int(self.clock.now * 1000) + extend_ms


def keep_for(
    seconds: float, script: list[Exception | None], lock_ms: int = LOCK_MS
) -> tuple[AsyncLeaseKeeper, CancellationToken, ScriptedRenewals]:
    clock = FakeClock()
    renew = ScriptedRenewals(clock, script)
    token = CancellationToken()

    async def main() -> AsyncLeaseKeeper:
        keeper = AsyncLeaseKeeper(
            renew, lock_ms, name="unit", token=token, clock=clock, sleep=clock.sleep
        )
        async with keeper:
            await clock.work_until(seconds, token)
        return keeper

    return asyncio.run(main()), token, renew


def test_it_renews_every_third_of_the_lock_while_the_work_runs() -> None:
    keeper, token, renew = keep_for(0.75, [])
    assert renew.calls == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    assert keeper.renewals == 7 and not keeper.lost and not token.cancelled


def test_transient_errors_are_retried_within_the_lease() -> None:
    # 600 ms lock: the renewal due at 200 ms fails twice, then succeeds.
    errors: list[Exception | None] = [RetryableError("renew", "connection lost")] * 2
    keeper, token, renew = keep_for(1.0, errors, lock_ms=600)
    assert renew.calls[0] == 0.2 and len(renew.calls) >= 4
    assert keeper.transient_errors == 2 and keeper.renewals >= 2
    assert not keeper.lost and not token.cancelled


def test_a_lost_lease_cancels_the_token() -> None:
    keeper, token, _ = keep_for(0.4, [LockLost("renew", "taken over")])
    assert keeper.lost and token.cancelled
    assert "taken over" in (keeper.lost_reason or "")


def test_errors_until_the_margin_give_the_lease_up_in_time() -> None:
    errors: list[Exception | None] = [RetryableError("renew", "down")] * 100
    keeper, token, renew = keep_for(0.6, errors)
    assert keeper.lost and token.cancelled
    assert "ran out" in (keeper.lost_reason or "")
    # Given up before the lease (renewed last at 0) ends at 0.3 s.
    assert renew.calls and max(renew.calls) < 0.3
