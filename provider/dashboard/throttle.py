"""The brake on a password guesser: sign-ins that failed lately, counted per
key (a user, a client address), and how long the next attempt of a key must
wait. Standard library only.

A key's first FREE_FAILURES failures cost nothing; from then on each one
doubles the wait before its next attempt (1 s, 2 s, 4 s, ... at most
MAX_DELAY_S). An attempt is counted as failed when it starts and given back
when it succeeds, so a burst of parallel guesses gets no more password
checks than the same guesses one after another. A key is forgotten
FORGET_AFTER_S after its last failure; at most CAPACITY keys are kept (the
longest quiet goes first, so memory stays bounded whatever the guesser
sends).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

FREE_FAILURES = 5
FIRST_DELAY_S = 1.0
MAX_DELAY_S = 300.0
FORGET_AFTER_S = 3600.0
CAPACITY = 10_000


@dataclass
class _Failures:
    count: int
    last_at: float


class SignInThrottle:
    def __init__(
        self,
        *,
        free_failures: int = FREE_FAILURES,
        first_delay_s: float = FIRST_DELAY_S,
        max_delay_s: float = MAX_DELAY_S,
        forget_after_s: float = FORGET_AFTER_S,
        capacity: int = CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if forget_after_s < max_delay_s:
            raise ValueError("a key must be kept at least as long as its longest wait")
        self._free, self._first_s, self._max_s = free_failures, first_delay_s, max_delay_s
        self._forget_s, self._capacity, self._clock = forget_after_s, capacity, clock
        self._keys: OrderedDict[str, _Failures] = OrderedDict()  # the longest quiet first
        self._lock = threading.Lock()

    def begin(self, keys: Iterable[str]) -> float:
        """0.0: the attempt may check its password, and counts as failed
        until `succeeded`; else the seconds its keys must still wait (then
        nothing is counted: a refused attempt checked nothing)."""
        keys = tuple(keys)
        with self._lock:
            now = self._clock()
            self._forget(now)
            wait = max((self._wait(key, now) for key in keys), default=0.0)
            if wait > 0:
                return wait
            for key in keys:
                found = self._keys.pop(key, None) or _Failures(0, now)
                found.count, found.last_at = found.count + 1, now
                self._keys[key] = found
            while len(self._keys) > self._capacity:
                self._keys.popitem(last=False)
            return 0.0

    def failed(self, keys: Iterable[str]) -> float:
        """The attempt failed: its keys wait from now. The longest wait it set."""
        with self._lock:
            now, longest = self._clock(), 0.0
            for key in keys:
                found = self._keys.pop(key, None)
                if found is not None:
                    found.last_at = now
                    self._keys[key] = found
                    longest = max(longest, self._delay(found.count))
            return longest

    def succeeded(self, forgotten: str, given_back: Iterable[str]) -> None:
        """The attempt signed in: `forgotten` (the user) loses its failures;
        the others (the address) get back the one this attempt counted."""
        with self._lock:
            self._keys.pop(forgotten, None)
            for key in given_back:
                found = self._keys.get(key)
                if found is not None:
                    found.count -= 1
                    if found.count <= 0:
                        del self._keys[key]

    def _delay(self, count: int) -> float:
        if count < self._free:
            return 0.0
        return min(self._first_s * 2.0 ** min(count - self._free, 32), self._max_s)

    def _wait(self, key: str, now: float) -> float:
        found = self._keys.get(key)
        if found is None:
            return 0.0
        return max(found.last_at + self._delay(found.count) - now, 0.0)

    def _forget(self, now: float) -> None:
        while self._keys:
            key, oldest = next(iter(self._keys.items()))
            if now - oldest.last_at < self._forget_s:
                return
            del self._keys[key]
