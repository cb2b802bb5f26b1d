"""Text a program did not write itself (a stored name, a reason), made inert
for a terminal or a scraper: every C0 and C1 control character (ESC, BEL,
CR, ...), DEL, the line and paragraph separators and the bidirectional
overrides become their escape (\\x1b, \\u202e), so an escape sequence
arrives as text. The command line (provider/cli/plain.py) and the metrics'
label values use it."""

from __future__ import annotations

import re

_UNSHOWN = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0, DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks and overrides
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff]"  # lone surrogates: no encoding can print them
)


def escape_one(found: re.Match[str]) -> str:
    """The escape of one matched character."""
    code = ord(found.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(value: object) -> str:
    """`value` as one line of inert text: each control character as its escape."""
    return _UNSHOWN.sub(escape_one, str(value))
