"""One home for waiting before trying again: exponential, capped, with jitter.

Every loop that retries (a worker's fetch after an error, an ack, a lease
renewal, a migration's table lock) and the workers' idle polling take their
pauses from a Backoff, so that a fleet that failed together does not retry
together: each pause is drawn from the upper part of its ceiling.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

_JITTER = random.Random()
MAX_DOUBLINGS = 62  # 2.0 ** 62 times any first pause is past any cap


@dataclass(frozen=True)
class Backoff:
    """first_s doubled after each failure in a row, at most cap_s; each pause
    is that ceiling times a factor drawn from [1 - jitter, 1] (0: exactly)."""

    first_s: float
    cap_s: float
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.first_s <= self.cap_s:
            raise ValueError(f"a backoff needs 0 < first_s <= cap_s, got {self}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter is a fraction between 0 and 1, got {self.jitter}")

    def ceiling_s(self, failures: int) -> float:
        """The longest pause after `failures` failures in a row (1: the first)."""
        doublings = min(max(failures, 1) - 1, MAX_DOUBLINGS)
        return min(self.cap_s, self.first_s * 2.0**doublings)

    def pause_s(self, failures: int, rng: random.Random | None = None) -> float:
        """The pause after `failures` failures in a row (1: the first)."""
        spread = self.jitter * (rng or _JITTER).random()
        return self.ceiling_s(failures) * (1.0 - spread)
