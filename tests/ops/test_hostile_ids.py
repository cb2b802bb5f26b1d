"""Stored ids reach the terminal as inert text (issue 36): an instance id is
whatever a caller stored, and the CLI prints it in tables, titles, results
and error lines. An id that rich would read as markup must not crash a verb
(MarkupError), and one holding escape sequences (set the window title, write
the clipboard with OSC 52, clear the screen, C1 controls, a bidirectional
override) must reach the terminal as visible escapes, not as the sequences.

The ids are stored through the provider on a real hub; the verbs run in
process (a pipe) and once in a pseudo-terminal, where rich renders as it
does for an operator."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import start_orchestration
from provider import TaskHub
from provider.cli import main
from tests.support.busy_hub import set_cap
from tests.support.terminal import in_a_terminal
from tests.validation.harness import create_instance

MARKUP = "[/bold]order-1[red]"  # rich: MarkupError, closing tag matches nothing
OSC = "\x1b]0;owned\x07\x1b]52;c;b3duZWQ=\x07order-2"  # window title, then clipboard
CSI = "\x1b[2J\x1b[31morder-3"  # clear the screen, then red
C1 = "\x9b31m\x9d0;t\x9corder-4"  # the same in 8-bit C1 controls
BIDI = "\u202eorder-5"  # shown reversed
HOSTILE = (MARKUP, OSC, CSI, C1, BIDI)
# How each is shown: as written, each control character as its escape.
SHOWN = {
    MARKUP: "[/bold]order-1[red]",
    OSC: r"\x1b]0;owned\x07\x1b]52;c;b3duZWQ=\x07order-2",
    CSI: r"\x1b[2J\x1b[31morder-3",
    C1: r"\x9b31m\x9d0;t\x9corder-4",
    BIDI: r"\u202eorder-5",
}
# What must never reach the terminal raw (rich's own colours, in a terminal,
# are ESC [ ... m: those are checked apart).
RAW = ("\x1b", "\x07", "\x9b", "\x9c", "\x9d", "\u202e")


@pytest.fixture
def hostile_hub(hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]) -> str:
    """Every operator view holds a hostile id: instances (MARKUP and BIDI
    running, so stuck too), a lease (OSC), a dead letter (CSI), a poison
    candidate (C1)."""
    create_instance(hub, MARKUP)
    create_instance(hub, BIDI)
    hub.enqueue_orchestrator_work(OSC, start_orchestration(OSC))
    leased = hub.fetch_orchestration_item(60_000)
    assert leased is not None and leased.instance_id == OSC

    set_cap(sql, hub_schema, 2)  # the lowest threshold a hub accepts
    hub.enqueue_orchestrator_work(CSI, start_orchestration(CSI))
    for _ in range(2):
        item = hub.fetch_orchestration_item(60_000)
        assert item is not None and item.instance_id == CSI
        hub.abandon_orchestration_item(item.lock_token)
    assert hub.fetch_orchestration_item(60_000) is None  # moved to dead_letters
    set_cap(sql, hub_schema, 50)

    hub.enqueue_orchestrator_work(C1, start_orchestration(C1))
    sql.execute(
        f'UPDATE "{hub_schema}".orchestrator_queue SET attempt_count = 42 WHERE instance_id = %s',
        [C1],
    )
    return hub_schema


def run(capsys: pytest.CaptureFixture[str], url: str, schema: str, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([*argv, "--url", url, "--schema", schema])
    out, err = capsys.readouterr()
    return code, out + err


def raw_in(printed: str) -> list[str]:
    return [repr(char) for char in RAW if char in printed]


def test_every_view_prints_hostile_ids_as_visible_text(
    capsys: pytest.CaptureFixture[str], database_url: str, hostile_hub: str
) -> None:
    shown: dict[tuple[str, ...], str] = {}
    for verb in (
        ("inspect", "instances"),
        ("inspect", "leases"),
        ("inspect", "poison"),
        ("inspect", "dead-letters"),
        ("inspect", "stuck"),
        *(("inspect", "instance", instance) for instance in HOSTILE),
    ):
        code, printed = run(capsys, database_url, hostile_hub, *verb)
        assert code == 0, (verb, printed)
        assert raw_in(printed) == [], (verb, printed)
        shown[verb] = printed
    everything = "".join(shown.values())
    for instance in HOSTILE:  # each shown, as its escapes
        assert SHOWN[instance] in everything, instance
    assert SHOWN[OSC] in shown[("inspect", "leases")]
    assert SHOWN[CSI] in shown[("inspect", "dead-letters")]
    assert SHOWN[C1] in shown[("inspect", "poison")]
    assert SHOWN[MARKUP] in shown[("inspect", "stuck")]
    assert f"instance {SHOWN[OSC]}" in shown[("inspect", "instance", OSC)]  # the title


def test_results_and_error_lines_print_hostile_ids_as_visible_text(
    capsys: pytest.CaptureFixture[str], database_url: str, hostile_hub: str
) -> None:
    runs = {
        "cancel": run(capsys, database_url, hostile_hub, "cancel", MARKUP, "--yes"),
        "raise-event": run(capsys, database_url, hostile_hub, "raise-event", BIDI, OSC, '"x"'),
        "not found": run(capsys, database_url, hostile_hub, "inspect", "instance", OSC + "-gone"),
        # No terminal to ask on: refused, the question quoted in the error line.
        "not confirmed": run(capsys, database_url, hostile_hub, "delete-instance", BIDI),
        "the next page": run(
            capsys, database_url, hostile_hub, "inspect", "instances", "--limit", "1"
        ),
    }
    for name, (_, printed) in runs.items():
        assert "Traceback" not in printed, (name, printed)
        assert raw_in(printed) == [], (name, printed)
    assert runs["cancel"] == (0, f"cancel of {SHOWN[MARKUP]} queued: it ends at its next turn\n")
    assert runs["raise-event"] == (0, f"event {SHOWN[OSC]} raised for {SHOWN[BIDI]}\n")
    assert runs["not found"][0] == 3 and SHOWN[OSC] in runs["not found"][1]
    assert runs["not confirmed"][0] == 5 and SHOWN[BIDI] in runs["not confirmed"][1]
    assert "more: --after " in runs["the next page"][1]


def test_json_output_escapes_them_and_keeps_them_whole(
    capsys: pytest.CaptureFixture[str], database_url: str, hostile_hub: str
) -> None:
    code, printed = run(capsys, database_url, hostile_hub, "inspect", "instances", "--json")
    assert code == 0 and raw_in(printed) == []
    found = {row["instance_id"] for row in json.loads(printed)["instances"]}
    # Each exactly as stored (CSI's only message is a dead letter: no instance).
    assert {MARKUP, OSC, C1, BIDI} <= found


def test_a_terminal_gets_no_escape_sequence_from_a_stored_id(
    database_url: str, hostile_hub: str
) -> None:
    env = {**os.environ, "DATABASE_URL": database_url, "TERM": "xterm-256color"}
    for setting in ("NO_COLOR", "COLUMNS", "LINES"):  # the terminal's own size, and colours
        env.pop(setting, None)
    written = in_a_terminal(
        [sys.executable, "-m", "provider", "inspect", "instances", "--schema", hostile_hub], env
    )
    text = written.decode("utf-8", errors="replace")
    assert "Traceback" not in text and "order-5" in text
    assert b"\x1b]" not in written  # no operating system command (title, clipboard)
    assert b"\x07" not in written and b"\x1b[2J" not in written
    for char in ("\x9b", "\x9c", "\x9d", "\u202e"):
        assert char.encode() not in written, repr(char)
