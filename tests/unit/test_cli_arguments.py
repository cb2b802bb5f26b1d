"""The argument layer of `taskhub-pg`, without a database: each mistake a
user makes on the command line ends with its exit code (2 usage, 4
unreachable) and one line on stderr, or one JSON object under --json, with
no traceback and no password; and the mistakes found in the arguments are
found before anything connects (the URLs here point at a closed port, so a
verb that connected first would exit 4, not 2). tests/ops covers the same
verbs against a real server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from provider.cli.action_commands import cutoff_ms
from provider.cli.app import wants_json
from provider.cli.options import UNREACHABLE, USAGE, Failure
from provider.moments import parse_moment
from tests.unit.cli_runs import PASSWORD, UNREACHABLE_URL, only_json, only_line, run

BAD_SCHEMAS = {
    "upper case": "Orders",
    "a leading digit": "1orders",
    "64 characters": "h" * 64,
}


@pytest.mark.parametrize("schema", BAD_SCHEMAS.values(), ids=BAD_SCHEMAS.keys())
def test_a_bad_schema_name_is_exit_2_in_one_line_before_connecting(
    capsys: pytest.CaptureFixture[str], schema: str
) -> None:
    ran = run(capsys, "inspect", "queues", "--url", UNREACHABLE_URL, "--schema", schema)
    assert ran.code == USAGE
    assert only_line(ran).startswith(f"taskhub-pg: --schema: invalid schema name {schema!r}")


def test_a_bad_schema_name_under_json_is_one_json_object_and_stdout_stays_empty(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "inspect", "queues", "--schema", "Orders", "--url", UNREACHABLE_URL, "--json")
    record = only_json(ran)
    assert record["exit_code"] == USAGE and record["hint"] is None
    assert record["error"].startswith("--schema: invalid schema name 'Orders'")


def test_the_url_comes_from_database_url_when_not_given(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", UNREACHABLE_URL)
    ran = run(capsys, "inspect", "queues")
    # From the environment, a password is no news for ps: no warning.
    assert ran.code == UNREACHABLE and "database unreachable" in only_line(ran)
    assert len(ran.err.splitlines()) == 1
    monkeypatch.setenv("DATABASE_URL", "   ")
    ran = run(capsys, "inspect", "queues")
    assert ran.code == USAGE and "--url is required (or set DATABASE_URL" in only_line(ran)


# Verbs tests/ops does not already run against a closed port.
CONNECTING_VERBS: dict[str, tuple[str, ...]] = {
    "inspect instance": ("inspect", "instance", "order-1"),
    "inspect instances": ("inspect", "instances"),
    "prune": ("prune", "--completed-before", "30d", "--yes"),
    "cancel": ("cancel", "order-1", "--yes"),
    "raise-event": ("raise-event", "order-1", "Paid", '"yes"'),
    "turn-form": ("turn-form",),
}


@pytest.mark.parametrize("verb", CONNECTING_VERBS.values(), ids=CONNECTING_VERBS.keys())
def test_an_unreachable_database_is_exit_4_at_once_with_the_password_masked(
    capsys: pytest.CaptureFixture[str], verb: Sequence[str]
) -> None:
    ran = run(capsys, *verb, "--url", UNREACHABLE_URL, "--schema", "orders")
    assert ran.code == UNREACHABLE
    line = only_line(ran)
    assert line.startswith("taskhub-pg: database unreachable: ") and "port 1" in line
    assert ran.seconds < 2


def test_an_unreachable_database_under_json_is_one_json_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "cancel", "order-1", "--yes", "--json", "--url", UNREACHABLE_URL)
    record = only_json(ran)
    assert record["exit_code"] == UNREACHABLE
    assert record["error"].startswith("database unreachable: ")


# Mistakes click finds while parsing: (verb, its arguments, what the message names).
PARSE_MISTAKES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "prune without --completed-before": ("prune", (), "Missing option '--completed-before'"),
    "a prune batch of 0": (
        "prune",
        ("--completed-before", "1d", "--batch-size", "0"),
        "'--batch-size'",
    ),
    "a prune batch too large": (
        "prune",
        ("--completed-before", "1d", "--batch-size", "10001"),
        "'--batch-size'",
    ),
    "raise-event without NAME": ("raise-event", ("order-1",), "Missing argument 'NAME'"),
    "a dead letter id not a number": ("requeue", ("seven",), "'DEAD_LETTER_ID'"),
    "a limit below 1": ("inspect queues", ("--limit", "0"), "'--limit'"),
    "an unknown status": ("inspect instances", ("--status", "Done"), "'--status'"),
    "an unknown turn form": ("turn-form", ("yaml",), "'yaml' is not one of"),
}


@pytest.mark.parametrize(
    ("verb", "arguments", "names"), PARSE_MISTAKES.values(), ids=PARSE_MISTAKES.keys()
)
def test_a_missing_or_invalid_argument_is_exit_2_naming_it_before_connecting(
    capsys: pytest.CaptureFixture[str], verb: str, arguments: Sequence[str], names: str
) -> None:
    ran = run(capsys, *verb.split(), *arguments, "--url", UNREACHABLE_URL)
    assert ran.code == USAGE
    assert ran.out == "" and "Traceback" not in ran.err
    assert names in ran.err
    assert f"Try 'taskhub-pg {verb} --help' for help." in ran.err


def test_a_missing_option_under_json_is_one_json_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "prune", "--json", "--url", UNREACHABLE_URL)
    record = only_json(ran)
    assert record["exit_code"] == USAGE and "--completed-before" in record["error"]


def test_event_data_that_is_not_json_is_exit_2_before_the_url_is_even_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    ran = run(capsys, "raise-event", "order-1", "Approved", "yes")
    assert ran.code == USAGE
    assert only_line(ran) == "taskhub-pg: DATA must be JSON (a text is quoted: '\"yes\"')"


def test_a_prune_cutoff_that_is_no_time_is_exit_2_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "prune", "--completed-before", "last week", "--url", UNREACHABLE_URL)
    assert ran.code == USAGE
    line = only_line(ran)
    assert "'last week' is neither like 30d / 12h nor ISO 8601" in line
    assert line.endswith("; e.g. 30d or 2026-01-31")


def test_an_instances_time_filter_that_is_no_time_is_exit_2_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "inspect", "instances", "--started-after", "soon", "--url", UNREACHABLE_URL)
    assert ran.code == USAGE


def test_json_errors_are_wanted_for_a_json_flag_anywhere_before_a_double_dash() -> None:
    assert wants_json(["inspect", "queues", "--schema", "Bad", "--json"])
    assert not wants_json(["raise-event", "i", "Paid", "--", "--json"])  # DATA, not the flag
    assert not wants_json(["status", "--url", "postgresql://h/db"])


NOW_S = 1_700_000_000.0


def test_a_moment_ago_counts_back_from_now() -> None:
    now = datetime.fromtimestamp(NOW_S, tz=UTC)
    ago = {"90s": 90, "45m": 2_700, "12h": 43_200, " 30d ": 2_592_000}
    assert {when: parse_moment(when, now).timestamp() for when in ago} == {
        when: NOW_S - seconds for when, seconds in ago.items()
    }


def test_an_iso_cutoff_without_a_zone_is_utc_and_one_with_a_zone_keeps_it() -> None:
    assert cutoff_ms("2026-01-31") == 1_769_817_600_000
    assert cutoff_ms("2026-01-31T02:00:00+02:00") == 1_769_817_600_000


def test_a_cutoff_in_another_unit_is_a_usage_error() -> None:
    with pytest.raises(Failure) as refused:
        cutoff_ms("2w")
    assert refused.value.code == USAGE and "'2w' is neither like 30d" in refused.value.message
    assert PASSWORD not in refused.value.message


def test_the_shell_completion_script_names_the_verbs_program() -> None:
    """Typer's completion (issue 40): `taskhub-pg --show-completion bash`
    prints a script that completes taskhub-pg's verbs and options."""
    shown = subprocess.run(
        [sys.executable, "-m", "provider", "--show-completion", "bash"],
        capture_output=True,
        text=True,
        check=False,
        env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "PATH": "/usr/bin:/bin"},
    )
    assert shown.returncode == 0, shown.stderr
    assert "complete" in shown.stdout and "_TASKHUB_PG_COMPLETE" in shown.stdout.upper()
