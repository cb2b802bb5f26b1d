"""provider/cli/plain.py: what the CLI prints of a stored value is inert
text. Control characters (C0, DEL, C1), bidirectional overrides, line
separators and lone surrogates become their escapes; markup stays text."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from provider.cli.plain import plain, visible, visible_lines

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
