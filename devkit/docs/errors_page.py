"""reference/errors.md, written from the code at every build: the command
line's exit codes (provider/cli/options.py), the SQLSTATEs the procedures of
sql/head/ raise and the functions that raise each, and what the provider
makes of a SQLSTATE (provider/errors.py). A procedure that starts raising a
code this page does not explain fails the build."""

from __future__ import annotations

import re
from pathlib import Path

from provider import errors

ROOT = Path(__file__).resolve().parent.parent.parent
HEAD = ROOT / "sql" / "head"
OPTIONS = ROOT / "provider" / "cli" / "options.py"
EXIT_CODES_HEADING = "# Exit codes a pipeline can branch on."
_EXIT = re.compile(r"^(?P<name>[A-Z_]+) = (?P<code>\d+)(?:\s+# (?P<meaning>.*))?$", re.MULTILINE)
_RAISED = re.compile(r"ERRCODE = '(?P<code>\w+)'")
# Condition names a procedure may raise by name, and their codes.
_NAMED = {"program_limit_exceeded": "54000"}

# What each code the procedures raise means to a caller.
MEANINGS = {
    "TH001": "the lock token holds no live lease (expired, taken over, acked or cancelled): "
    "stop the work, do not ack it",
    "22023": "bad input: an argument the hub refuses (an empty id, a negative timeout, "
    "an unstorable JSON value, an unknown role); nothing was written",
    "22004": "a required argument was NULL",
    "54000": "a value too large or too deep to store (a payload over the size cap, "
    "JSON nested deeper than the runtime decodes)",
    "55000": "the object is not in a state for this: the instance has ended, or a "
    "guard's prerequisite is missing",
    "55006": "object in use: a restart of an instance that has not ended (Pending or "
    "Running); nothing was written",
    "55P03": "a runtime holds a turn of the instance now (a restart): try again in a "
    "moment; nothing was written",
    "P0002": "not found: no such instance, schedule or dead letter",
    "23505": "a start repeated an instance id with another orchestration, input or "
    "version; nothing was written",
    "42501": "not allowed: a runtime role's DDL refused by the guard, or a grant that "
    "would share the migrating role's rights",
    "42704": "no such role",
    "0A000": "not supported here: distributing a hub on a database without the Citus extension",
    "P0001": "raised and caught inside the hub (the event-trigger probe); never reaches a caller",
}


def errors_page() -> str:
    lines = [
        "# Exit codes and SQLSTATEs",
        "",
        "Written from the code at every build.",
        "",
        "## `taskhub-pg` exit codes",
        "",
        "An error is one line on stderr (one JSON object under `--json`), never a",
        "traceback; a pipeline can branch on the code.",
        "",
        "| code | name | when |",
        "|---|---|---|",
    ]
    for found in _EXIT.finditer(exit_code_block()):
        meaning = found["meaning"] or ("success" if found["code"] == "0" else "")
        lines.append(f"| {found['code']} | `{found['name']}` | {meaning} |")
    lines += [
        "",
        "## SQLSTATEs the procedures raise",
        "",
        "| SQLSTATE | meaning | the provider raises | raised by |",
        "|---|---|---|---|",
    ]
    raised = raised_codes()
    unexplained = sorted(set(raised) - set(MEANINGS))
    if unexplained:
        raise ValueError(
            f"sql/head raises SQLSTATEs errors_page.MEANINGS does not explain: {unexplained}"
        )
    for code, functions in sorted(raised.items()):
        names = ", ".join(f"`{name}`" for name in functions)
        lines.append(f"| `{code}` | {MEANINGS[code]} | `{python_error(code)}` | {names} |")
    lines += [
        "",
        "## What the provider makes of a SQLSTATE",
        "",
        "Every call's error is one of `provider.errors`' classes ([Python API](python-api.md)):",
        "",
        "| SQLSTATE | error | what to do |",
        "|---|---|---|",
        f"| `{errors.LEASE_LOST_SQLSTATE}` | `LockLost` | stop the work; the item is another's |",
    ]
    for code, kind in errors.REFUSALS.items():
        lines.append(f"| `{code}` | `{kind.__name__}` | {_first_line(kind.__doc__)} |")
    retryable = ", ".join(f"`{code}`" for code in sorted(errors._RETRYABLE_STATES))
    classes = ", ".join(f"`{prefix}xxx`" for prefix in errors._RETRYABLE_CLASSES)
    lines += [
        f"| {classes}, {retryable} | `RetryableError` | a passing condition: retry the same "
        "call later (the workers do, with backoff); a start is safe to repeat with the same id |",
        "| any other | `PermanentError` | retrying the same call cannot succeed |",
        "",
        "Bad input found in Python before any SQL runs is `InvalidInput` (a",
        "`PermanentError` and a `ValueError`, SQLSTATE `22023` as the procedures",
        "say it); a hub that cannot be opened as configured is",
        "`ConfigurationError`.",
        "",
    ]
    return "\n".join(lines)


def exit_code_block() -> str:
    """The lines of options.py from its exit codes' heading to the blank line after."""
    text = OPTIONS.read_text(encoding="utf-8")
    start = text.index(EXIT_CODES_HEADING)
    return text[start : text.index("\n\n", start)]


def raised_codes() -> dict[str, list[str]]:
    """Each SQLSTATE raised in sql/head/, with the functions (files) raising it."""
    found: dict[str, list[str]] = {}
    for path in sorted(HEAD.rglob("*.sql")):
        text = path.read_text(encoding="utf-8")
        for match in _RAISED.finditer(text):
            found.setdefault(_NAMED.get(match["code"], match["code"]), []).append(path.stem)
    return {code: sorted(set(names)) for code, names in found.items()}


def python_error(code: str) -> str:
    if code == errors.LEASE_LOST_SQLSTATE:
        return "LockLost"
    kind = errors.REFUSALS.get(code)
    if kind is not None:
        return kind.__name__
    return "RetryableError" if errors.is_retryable_sqlstate(code) else "PermanentError"


def _first_line(text: str | None) -> str:
    return " ".join((text or "").split(".")[0].split())
