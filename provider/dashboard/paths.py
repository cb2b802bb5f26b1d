"""Where the dashboard is served: at the root, or under a sub-path that a
proxy passes on as it came (--root-path /taskhub). No web package needed,
so the CLI refuses a bad one before importing any."""

from __future__ import annotations

import re

_PART = re.compile(r"[A-Za-z0-9._~-]+")


def checked_root_path(root_path: str) -> str:
    """A sub-path like /taskhub or /ops/hub (no slash at the end), or ""."""
    if root_path in ("", "/"):
        return ""
    parts = root_path.split("/")
    named = all(_PART.fullmatch(part) and part not in (".", "..") for part in parts[1:])
    if parts[0] != "" or not named:
        raise ValueError(
            f"root path {root_path[:60]!r} is not like /taskhub: a slash, then letters,"
            " digits, '.', '_', '~' or '-' (more parts each after a slash, none at the end)"
        )
    return root_path
