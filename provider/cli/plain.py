"""What the command line prints of a value it did not write itself (an
instance id, an event name, a reason, a role's name, libpq's words): plain
text, never rich markup, with control characters shown, not sent.

Stored ids are whatever a caller stored: `[/x]` read as markup makes rich
raise MarkupError, and ESC ] 52 ... BEL would write the terminal's
clipboard. Every C0 and C1 control character (ESC, BEL, CR, ...), DEL, the
line and paragraph separators and the bidirectional overrides (which can
show a text reversed) become their escape (\\x1b, \\u202e), so an escape
sequence reaches the terminal as text.
"""

from __future__ import annotations

import re

from rich.text import Text

_UNSHOWN = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks and overrides
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff]"  # lone surrogates: no encoding can print them
)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(value: object) -> str:
    """`value` as one line of inert text: each control character as its escape."""
    return _UNSHOWN.sub(_escape, str(value))


def visible_lines(value: object) -> str:
    """As `visible`, keeping the line breaks of a text of several lines."""
    return "\n".join(visible(line) for line in str(value).split("\n"))


def plain(value: object, style: str = "") -> Text:
    """`value` as rich Text: printed as it is, never read as markup."""
    return Text(visible(value), style=style)
