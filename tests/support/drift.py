"""The drift check of a hub at a URL, on a session of its own, as
`taskhub-pg check` opens one (provider/operations/drift_check.py takes its
caller's connection)."""

from __future__ import annotations

from provider.deploy import privileged_session
from provider.operations import drift_check
from provider.operations.drift_check import CheckReport


def check(url: str, schema: str) -> CheckReport:
    with privileged_session.one_session(url) as conn:
        return drift_check.check(conn, schema)
