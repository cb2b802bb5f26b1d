"""duroxide provider validation suite, §3.12 long_polling (the short-polling tests).

Our provider short-polls: a fetch has no poll timeout parameter and always
returns at once. The suite's "fetch with a 500 ms poll returns None in less
than the threshold" becomes "a fetch on an empty store returns None in less
than the threshold". Not ported, as they apply to long-polling providers
only (SQLite does not run them either): #2 test_long_poll_waits_for_timeout
and #5 test_long_poll_work_item_waits_for_timeout.

The threshold is 500 ms, not the suite's default 100 ms: the machine has two
cores shared with other test sessions, and the measured call is the first on
a fresh TaskHub (pool checkout and first-call plan compilation, about 10 ms
when idle), so a scheduling stall could push it past 100 ms. It still tells
the two kinds of provider apart: a long-polling fetch would take at least the
500 ms poll the suite asks for.
"""

from __future__ import annotations

import time

from provider import TagFilter, TaskHub
from tests.validation.harness import LONG_LOCK

SHORT_POLL_THRESHOLD_S = 0.5
# test_fetch_respects_timeout_upper_bound: a 300 ms poll plus 200 ms tolerance.
UPPER_BOUND_S = 0.3 + 0.2


def test_short_poll_returns_immediately(provider: TaskHub) -> None:
    start = time.monotonic()
    item = provider.fetch_orchestration_item(LONG_LOCK)
    elapsed = time.monotonic() - start
    assert item is None, "the store should be empty"
    assert elapsed < SHORT_POLL_THRESHOLD_S, f"fetch took {elapsed * 1000:.0f} ms"


def test_fetch_respects_timeout_upper_bound(provider: TaskHub) -> None:
    start = time.monotonic()
    item = provider.fetch_orchestration_item(LONG_LOCK)
    elapsed = time.monotonic() - start
    assert item is None, "the store should be empty"
    assert elapsed < UPPER_BOUND_S, f"fetch took {elapsed * 1000:.0f} ms"


def test_short_poll_work_item_returns_immediately(provider: TaskHub) -> None:
    start = time.monotonic()
    lease = provider.fetch_work_item(LONG_LOCK, tags=TagFilter.default_only())
    elapsed = time.monotonic() - start
    assert lease is None, "the worker queue should be empty"
    assert elapsed < SHORT_POLL_THRESHOLD_S, f"fetch took {elapsed * 1000:.0f} ms"
