"""The drills' harness (drills/harness.py) alone, no server: the pace of the
starts, the events raised once their instance waits, the verdicts' two
wordings that the docs quote, and a server of the user's left alone."""

from __future__ import annotations

import threading

from drills.harness import (
    DueEvents,
    Verdict,
    error_line,
    exit_status,
    paced,
    server,
    waits_for_event,
    with_application_name,
)
from provider.types import CustomStatus


def test_paced_counts_from_one_until_stopped() -> None:
    stopping = threading.Event()
    seen = []
    for n in paced(10_000.0, stopping):
        seen.append(n)
        if n == 3:
            stopping.set()
    assert seen == [1, 2, 3]


def test_an_event_waits_until_its_instance_subscribed() -> None:
    answers = {"a": [False, True], "b": [True]}
    raised: list[str] = []
    events = DueEvents(lambda i: answers[i].pop(0), raised.append, 0.0, 0.0)
    events.add("a")
    events.add("b")
    events.raise_due()
    assert (raised, len(events)) == (["b"], 1)  # a said it does not wait yet
    events.raise_due()
    assert (raised, len(events)) == (["b", "a"], 0)


def test_an_event_not_yet_due_is_not_looked_at() -> None:
    events = DueEvents(lambda _: True, lambda _: None, 60.0, 0.0)
    events.add("later")
    events.raise_due()
    assert len(events) == 1


def test_waiting_reads_the_status_as_the_runtime_stored_it() -> None:
    assert waits_for_event(CustomStatus("waiting", 1), "waiting")
    assert waits_for_event(CustomStatus('"waiting"', 1), "waiting")
    assert not waits_for_event(CustomStatus("working", 1), "waiting")
    assert not waits_for_event(None, "waiting")


def test_verdicts_print_as_the_docs_quote_them() -> None:
    met = Verdict("migration runs succeeded", True, "100 of 100")
    missed = Verdict("no minute's p99 spikes", False, "6000 ms")
    assert met.met_line() == "  MET      migration runs succeeded: 100 of 100"
    assert missed.met_line() == "  NOT MET  no minute's p99 spikes: 6000 ms"
    assert met.line() == "PASS  migration runs succeeded: 100 of 100"
    assert missed.line() == "FAIL  no minute's p99 spikes: 6000 ms"
    assert (exit_status([met]), exit_status([met, missed]), exit_status([])) == (0, 1, 0)


def test_an_error_is_one_line_of_its_class_and_message() -> None:
    assert error_line(ValueError("bad input")) == "ValueError: bad input"
    assert len(error_line(RuntimeError("x" * 1000))) == 160


def test_application_name_replaces_any_given() -> None:
    url = "postgresql://u@h/db?application_name=old&sslmode=disable"
    assert with_application_name(url, "drill-app") == (
        "postgresql://u@h/db?sslmode=disable&application_name=drill-app"
    )


def test_a_server_of_the_users_is_used_as_it_is() -> None:
    with server("postgresql://u@h/db", prepare=lambda _: "never called") as found:
        assert (found.url, found.cluster) == ("postgresql://u@h/db", None)
