"""The capacity bench's judgement (bench/capacity): a step holds when every
minute after the warm-up has its p99 under the objective and its completions
within 5 % of the rate; a side's capacity is the highest rate held with
every rate below it held too."""

from __future__ import annotations

from bench.capacity.report import capacity
from bench.capacity.step import MinuteFigures, StepResult, StepSettings, p99


def step(side: str, rate: float, *minutes: tuple[int, float | None]) -> StepResult:
    settings = StepSettings(side, rate, minutes=len(minutes), minute_s=60.0)
    return StepResult(
        settings,
        [MinuteFigures(n + 1, done, p) for n, (done, p) in enumerate(minutes)],
    )


def test_the_warm_up_minute_is_not_judged() -> None:
    assert step("taskhub", 10, (0, None), (600, 120.0), (600, 480.0)).holds(500)


def test_a_slow_minute_or_a_short_one_breaks_the_step() -> None:
    assert not step("taskhub", 10, (600, 1.0), (600, 120.0), (600, 520.0)).holds(500)
    assert not step("taskhub", 10, (600, 1.0), (560, 120.0), (600, 120.0)).holds(500)
    assert step("taskhub", 10, (600, 1.0), (571, 120.0), (600, 120.0)).holds(500)
    assert not step("taskhub", 10, (600, 1.0), (0, None)).holds(500)


def test_capacity_is_the_highest_rate_held_with_every_rate_below_it() -> None:
    steps = [
        step("taskhub", 40, (0, None), (2400, 100.0)),
        step("taskhub", 60, (0, None), (3600, 600.0)),
        step("taskhub", 80, (0, None), (4800, 100.0)),  # a lucky step above a broken one
        step("duroxide-0.2.2", 40, (0, None), (1000, 9000.0)),
    ]
    assert capacity(steps, "taskhub", 500) == 40
    assert capacity(steps, "duroxide-0.2.2", 500) == 0


def test_p99_of_a_hundred_values_is_the_ninety_ninth() -> None:
    assert p99([float(n) for n in range(1, 101)]) == 100.0
    assert p99([float(n) for n in range(1, 201)]) == 199.0
    assert p99([]) is None
