"""provider/cli/plain.py: what the CLI prints of a stored value is inert
text. Control characters (C0, DEL, C1), bidirectional overrides, line
separators and lone surrogates become their escapes; markup stays text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from provider.cli.inspect_commands import print_failure
from provider.cli.plain import plain, under, visible, visible_lines
from provider.hub_rows import FailedStep, InstanceFailure

ESCAPED = {
    "ESC and BEL (OSC 52)": ("\x1b]52;c;aGk=\x07x", r"\x1b]52;c;aGk=\x07x"),
    "NUL, tab, newline, CR": ("a\x00b\tc\nd\re", r"a\x00b\x09c\x0ad\x0de"),
    "DEL": ("a\x7fb", r"a\x7fb"),
    "C1 (CSI, OSC, ST)": ("\x9b\x9d\x9c", r"\x9b\x9d\x9c"),
    "bidi override": ("\u202eabc", r"\u202eabc"),
    "line separator": ("a\u2028b", r"a\u2028b"),
    "lone surrogate": ("a\ud800b", r"a\ud800b"),
    "printable, accented, emoji": ("café ✓ 👍 [b]x[/b]", "café ✓ 👍 [b]x[/b]"),
}


@pytest.mark.parametrize(("value", "shown"), ESCAPED.values(), ids=ESCAPED.keys())
def test_each_control_character_is_shown_as_its_escape(value: str, shown: str) -> None:
    assert visible(value) == shown
    assert visible(visible(value)) == visible(value)  # printing twice changes nothing more


def test_markup_is_printed_as_written() -> None:
    written = io.StringIO()
    Console(file=written, width=200).print(plain("[/bold]order[red]"))
    assert written.getvalue() == "[/bold]order[red]\n"


def test_lines_keep_their_breaks() -> None:
    assert visible_lines("a\x1b\nb") == "a\\x1b\nb"


def test_a_text_of_several_lines_keeps_its_breaks_and_tabs_under_its_field() -> None:
    """Issue 58: a traceback printed as lines, each under the first, with every
    other control character still an escape (a CR could overwrite a line)."""
    traceback = "Traceback (most recent call last):\n\tFile x\r\x1b[2J\nValueError: no"
    assert under("  error: ", traceback) == (
        "  error: Traceback (most recent call last):\n"
        "         \tFile x\\x0d\\x1b[2J\n"
        "         ValueError: no"
    )


def test_the_commands_own_line_breaks_are_not_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect instance` printed its own section header as \\x0afailure."""
    failure = InstanceFailure(
        execution_id=1,
        error="boom\n  at step 2",
        details=None,
        failed_steps=[
            FailedStep(3, "ActivityFailed", "Charge", 2, {"Application": {"message": "a\nb"}})
        ],
    )
    print_failure(failure)
    out = capsys.readouterr().out
    assert "\\x0a" not in out
    assert out.splitlines() == [
        "",
        "failure (execution 1)",
        "  error: boom",
        "           at step 2",
        "  ActivityFailed Charge (scheduled 2 times): a",
        "                                             b",
    ]
