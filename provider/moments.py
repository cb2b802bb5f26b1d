"""A moment as operators write it, in the CLI and the dashboard alike:
`30d`, `12h`, `45m` or `90s` ago, or an ISO 8601 time (UTC unless it says)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_AGO = re.compile(r"(\d{1,7})([smhd])")
_UNIT = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
EXAMPLE = "e.g. 30d or 2026-01-31"


def parse_moment(text: str, now: datetime | None = None) -> datetime:
    """The moment `text` names; ValueError when it names none."""
    written = text.strip()
    ago = _AGO.fullmatch(written)
    if ago:
        moment = now or datetime.now(UTC)
        return moment - timedelta(**{_UNIT[ago.group(2)]: int(ago.group(1))})
    try:
        found = datetime.fromisoformat(written)
    except ValueError:
        raise ValueError(f"{text!r} is neither like 30d / 12h nor ISO 8601") from None
    return found if found.tzinfo else found.replace(tzinfo=UTC)
