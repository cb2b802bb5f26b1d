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

from provider.inert_text import escape_one as _escape
from provider.inert_text import visible as visible  # re-exported: the CLI's one escaper

# The same, but for the line breaks and tabs of a text of several lines (a
# traceback): those are layout, and reach the terminal as such.
_UNSHOWN_IN_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 but tab and newline, DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u2028\u2029"
    "\ud800-\udfff]"
)


def visible_lines(value: object, indent: str = "") -> str:
    """As `visible`, keeping the line breaks and tabs of a text of several
    lines, each line after the first indented by `indent`."""
    lines = _UNSHOWN_IN_LINES.sub(_escape, str(value)).split("\n")
    return f"\n{indent}".join(lines)


def under(field: str, value: object) -> str:
    """`field` then `value`, its later lines indented to stand under its first."""
    return field + visible_lines(value, " " * len(field))


def plain(value: object, style: str = "") -> Text:
    """`value` as rich Text: printed as it is, never read as markup."""
    return Text(visible(value), style=style)
