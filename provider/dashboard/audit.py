"""The actions' audit log (logger provider.dashboard.actions): one line per
action taken or refused, naming the user and the client.

Everything a client chose (the action's name, the fields, an error that
quotes them) is written with repr() and cut to a few hundred characters, so a
newline cannot start a forged line and a megabyte cannot flood the log. The
client is the TCP peer unless that is a configured proxy (access.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from provider.dashboard.access import Identity

log = logging.getLogger("provider.dashboard.actions")

KEEP = 200  # characters of a value the log keeps


def shown(value: str) -> str:
    """A value as the log writes it: cut, then quoted and escaped."""
    if len(value) > KEEP:
        return repr(value[:KEEP]) + f"...({len(value)} characters)"
    return repr(value)


def fields_shown(fields: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{shown(k)}: {shown(v)}" for k, v in fields.items()) + "}"


def taken(action: str, fields: Mapping[str, str], who: Identity, client: str, outcome: str) -> None:
    log.info(
        "%s %s by %s from %s: %s",
        shown(action),
        fields_shown(fields),
        shown(who.name),
        shown(client),
        shown(outcome),
    )


def refused(
    action: str, fields: Mapping[str, str], who: Identity | None, client: str, reason: str
) -> None:
    log.warning(
        "refused %s %s by %s from %s: %s",
        shown(action),
        fields_shown(fields),
        shown(who.name) if who else "nobody signed in",
        shown(client),
        shown(reason),
    )
