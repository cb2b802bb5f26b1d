"""The worker's cache of trace contexts (provider/worker/trace_parents.py):
a context found is kept, least recently used out first; "none" only briefly."""

from __future__ import annotations

from provider.tracing import TraceContext
from provider.worker.trace_parents import TraceParents

CONTEXT = TraceContext("00-" + "a" * 32 + "-" + "b" * 16 + "-01")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_context_is_kept_and_none_only_for_a_while() -> None:
    clock = Clock()
    parents = TraceParents("orders", none_kept_s=10.0, clock=clock)
    assert parents.known("traced") == (False, None)
    parents.remember("traced", CONTEXT)
    parents.remember("untraced", None)
    clock.now = 9.0
    assert parents.known("untraced") == (True, None)
    clock.now = 11.0
    assert parents.known("untraced") == (False, None)  # read again: an event may have traced it
    assert parents.known("traced") == (True, CONTEXT)


def test_the_least_recently_used_goes_first_when_full() -> None:
    parents = TraceParents("orders", capacity=2)
    parents.remember("a", CONTEXT)
    parents.remember("b", CONTEXT)
    assert parents.known("a") == (True, CONTEXT)  # a is now the most recent
    parents.remember("c", CONTEXT)
    assert parents.known("b") == (False, None)
    assert parents.known("a") == (True, CONTEXT)
    assert parents.known("c") == (True, CONTEXT)
