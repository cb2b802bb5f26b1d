"""PacedPrune, the loop both `taskhub-pg prune` and the dashboard's prune run
over TaskHub.prune_ended: batches sized by the time they take, a pause after
each, a wait and then a stop while the hub is busy; never more than the limit,
and an end at the first batch that deletes nothing. A fake prune_ended and a
fake clock here (tests/sql/test_prune_ended.py runs the procedure,
tests/sql/test_dispatch_lag.py the lag it asks)."""

from __future__ import annotations

import pytest

from provider import PrunedBatch
from provider.client.retention import MAX_GROWTH, PacedPrune, PrunePacing
from provider.errors import InvalidInput, PermanentError, RetryableError


class Clock:
    def __init__(self) -> None:
        self.now, self.slept = 0.0, list[float]()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


class Backlog:
    """prune_ended over `roots` ended roots, each with one child, deleting
    `per_second` roots a second of the fake clock."""

    def __init__(self, roots: int, clock: Clock, per_second: float = 1_000.0) -> None:
        self.roots, self.clock, self.per_second = roots, clock, per_second
        self.asked = list[int]()

    def prune_ended(self, completed_before_ms: int, batch_size: int) -> PrunedBatch:
        assert completed_before_ms == 123
        self.asked.append(batch_size)
        taken = min(batch_size, self.roots)
        self.roots -= taken
        self.clock.now += taken / self.per_second
        return PrunedBatch(roots_deleted=taken, instances_deleted=2 * taken)


def paced(backlog: Backlog, clock: Clock, **settings: object) -> PacedPrune:
    limit = settings.pop("limit", None)
    lag = settings.pop("lag", None)
    return PacedPrune(
        backlog.prune_ended,
        123,
        limit=limit,  # type: ignore[arg-type]
        pacing=PrunePacing(**settings),  # type: ignore[arg-type]
        dispatch_lag_ms=lag,  # type: ignore[arg-type]
        clock=clock,
        sleep=clock.sleep,
    )


def test_fixed_batches_work_the_backlog_off_and_stop_at_the_first_empty_one() -> None:
    clock = Clock()
    backlog = Backlog(1_050, clock)
    batches = list(paced(backlog, clock, batch_seconds=0, max_batch=500, pause_seconds=0))
    assert [b.roots_deleted for b in batches] == [500, 500, 50]
    assert backlog.asked == [500, 500, 500, 500]  # the last one found nothing
    assert sum(batches, PrunedBatch()) == PrunedBatch(1_050, 2_100)
    assert clock.slept == []


def test_a_limit_asks_for_no_more_than_it_leaves() -> None:
    clock = Clock()
    backlog = Backlog(5_000, clock)
    batches = list(paced(backlog, clock, batch_seconds=0, max_batch=400, limit=1_000))
    assert backlog.asked == [400, 400, 200]
    assert sum(b.roots_deleted for b in batches) == 1_000 and backlog.roots == 4_000


def test_batches_grow_to_the_time_budget_and_no_faster_than_twofold() -> None:
    clock = Clock()  # 1,000 roots/s: a 0.2 s budget is 200 roots
    backlog = Backlog(2_000, clock)
    list(paced(backlog, clock, batch_seconds=0.2, max_batch=10_000, pause_seconds=0))
    assert backlog.asked[:4] == [50, 100, 200, 200]
    assert all(b <= a * MAX_GROWTH for a, b in zip(backlog.asked, backlog.asked[1:], strict=False))


def test_batches_shrink_at_once_when_the_server_slows_down() -> None:
    clock = Clock()
    backlog = Backlog(3_000, clock, per_second=1_000)
    prune = iter(paced(backlog, clock, batch_seconds=0.2, max_batch=10_000, pause_seconds=0))
    for _ in range(4):
        next(prune)
    assert backlog.asked[-1] == 200
    backlog.per_second = 100  # a loaded server: 200 roots now take 2 s
    next(prune)
    next(prune)
    assert backlog.asked[-1] == 20


def test_max_batch_caps_a_timed_batch() -> None:
    clock = Clock()
    backlog = Backlog(10_000, clock, per_second=100_000)
    list(paced(backlog, clock, batch_seconds=1.0, max_batch=300, pause_seconds=0))
    assert max(backlog.asked) == 300


def test_it_pauses_after_every_batch() -> None:
    clock = Clock()
    backlog = Backlog(1_000, clock)
    list(paced(backlog, clock, batch_seconds=0, max_batch=250, pause_seconds=0.5))
    assert clock.slept == [0.5] * 4


def test_it_waits_while_the_hub_is_busy_then_goes_on() -> None:
    clock = Clock()
    backlog = Backlog(100, clock)
    lags = iter([5_000, 3_000, 200, 0, 0])
    prune = paced(
        backlog,
        clock,
        batch_seconds=0,
        max_batch=100,
        pause_seconds=0,
        busy_lag_ms=1_000,
        lag=lambda: next(lags),
    )
    assert sum(b.roots_deleted for b in prune) == 100
    assert prune.stopped_busy is None
    assert clock.slept[:2] == [1.0, 1.0]  # asked again each second until the lag fell


def test_a_hub_busy_for_longer_than_the_wait_stops_the_prune_keeping_what_it_did() -> None:
    clock = Clock()
    backlog = Backlog(1_000, clock)
    lags = iter([0] + [2_500] * 100)
    prune = paced(
        backlog,
        clock,
        batch_seconds=0,
        max_batch=100,
        pause_seconds=0,
        busy_lag_ms=1_000,
        busy_wait_seconds=3,
        lag=lambda: next(lags),
    )
    assert [b.roots_deleted for b in prune] == [100]
    assert backlog.roots == 900 and sum(clock.slept) == pytest.approx(3.0)
    assert prune.stopped_busy is not None
    assert prune.stopped_busy.startswith("stopped: hub busy (dispatch lag 2500 ms above 1000 ms")


def test_no_busy_check_without_a_threshold_the_default() -> None:
    clock = Clock()
    backlog = Backlog(100, clock)

    def never() -> int:
        raise AssertionError("asked the hub with busy_lag_ms=0")

    prune = paced(backlog, clock, lag=never)
    assert sum(b.roots_deleted for b in prune) == 100


@pytest.mark.parametrize(
    "settings",
    [
        {"batch_seconds": -1},
        {"max_batch": 0},
        {"max_batch": 10_001},
        {"max_batch": 2.5},
        {"pause_seconds": "1"},
        {"busy_lag_ms": True},
        {"busy_wait_seconds": -0.1},
    ],
)
def test_bad_pacing_is_refused_by_name(settings: dict[str, object]) -> None:
    with pytest.raises(InvalidInput, match=next(iter(settings))):
        PrunePacing(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize("sqlstate", ["42883", "42501"])
def test_a_hub_that_cannot_tell_its_lag_is_pruned_without_the_check(sqlstate: str) -> None:
    """A hub before revision 0026 has no taskhub_dispatch_lag_ms; a role may
    lack EXECUTE on it: the prune goes on, and says why it did not ask."""
    clock = Clock()
    backlog = Backlog(300, clock)
    asked = []

    def lag() -> int:
        asked.append(1)
        raise PermanentError("taskhub_dispatch_lag_ms", "no such function", sqlstate)

    prune = paced(backlog, clock, batch_seconds=0, max_batch=100, busy_lag_ms=1_000, lag=lag)
    assert sum(b.roots_deleted for b in prune) == 300
    assert len(asked) == 1 and prune.busy_check_off is not None
    assert prune.busy_check_off.startswith("no busy check: the hub")


def test_any_other_failure_to_ask_is_the_prunes_failure() -> None:
    clock = Clock()

    def lag() -> int:
        raise RetryableError("taskhub_dispatch_lag_ms", "connection lost", "08006")

    with pytest.raises(RetryableError):
        list(paced(Backlog(300, clock), clock, busy_lag_ms=1_000, lag=lag))
