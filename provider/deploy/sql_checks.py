"""Checks written once, for the statements that need them.

A file under sql/ names a check as `__NAME(variable)__`; rendering
(provider/deploy/sql_files.py) puts the check's text there for that
variable, its continuation lines aligned under its first. The ack writes
each array of a turn in one of two ways (a row at a time where Citus runs,
one INSERT ... SELECT elsewhere: sql/head/orchestration_queue/
ack_orchestration_item.sql); both read their element checks from here, so
they cannot drift apart, and each stays an expression of its statement (no
function is called for it: the hot path's plans are unchanged)."""

from __future__ import annotations

import functools
import re

# name -> the check, of @element; continuation lines start at column 0.
CHECKS = {
    # An element too large to store (refused as turn element error 1).
    "TOO_LARGE": "pg_column_size(@element) > __SCHEMA__.taskhub_max_payload_bytes()",
    # Not a history event the fetch can hand back (error 2).
    "NOT_A_HISTORY_EVENT": (
        "jsonb_typeof(@element) <> 'object'\n"
        "OR jsonb_typeof(@element -> 'event_id') IS DISTINCT FROM 'number'\n"
        "OR (@element ->> 'event_id')::numeric < 1\n"
        "OR jsonb_typeof(@element -> 'event_data') IS DISTINCT FROM 'string'"
    ),
    # Not an activity's work item (error 3).
    "NOT_AN_ACTIVITY_ITEM": (
        "jsonb_typeof(@element) <> 'object'\n"
        "OR jsonb_typeof(@element -> 'ActivityExecute') IS DISTINCT FROM 'object'\n"
        "OR @element - 'ActivityExecute' <> '{}'::jsonb"
    ),
    # Not a message an orchestration can receive (error 4).
    "NOT_AN_ORCHESTRATOR_ITEM": "__SCHEMA__.taskhub_work_item_kind(@element) IS NULL",
}
_USE = re.compile(r"__([A-Z][A-Z_]*)\((\w+)\)__")


# A migration renders a few hundred files, each with its checks written out:
# once per text and process.
@functools.cache
def expand_checks(text: str) -> str:
    """`text` with every check it names written out."""

    def written_out(use: re.Match[str]) -> str:
        name, variable = use.group(1), use.group(2)
        if name not in CHECKS:
            raise ValueError(f"no check named {name} (provider/deploy/sql_checks.py)")
        column = use.start() - (text.rfind("\n", 0, use.start()) + 1)
        lines = CHECKS[name].replace("@element", variable).split("\n")
        return ("\n" + " " * column).join(lines)

    return _USE.sub(written_out, text)
