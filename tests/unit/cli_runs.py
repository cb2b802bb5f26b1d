"""Running `taskhub-pg` in process for the unit tier: main() with argv, its
exit code and what it printed; and the shapes an error must have (one line
on stderr, or one JSON object under --json). Nothing here connects: the
URLs either point at a closed local port or are never used."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import pytest

from provider.cli import main

PASSWORD = "s3cretpw"
# Nobody listens on port 1: connecting is refused at once.
UNREACHABLE_URL = f"postgresql://u:{PASSWORD}@127.0.0.1:1/db?connect_timeout=2"
# Valid, never connected to (the tests using it fail before any connection).
UNUSED_URL = f"postgresql://u:{PASSWORD}@db.invalid/db"


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    seconds: float


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    capsys.readouterr()
    started = time.monotonic()
    code = main(list(argv))
    seconds = time.monotonic() - started
    out, err = capsys.readouterr()
    return Ran(code, out, err, seconds)


# What a password in --url (these tests' URLs hold one) adds to stderr first.
URL_WARNING = "taskhub-pg: warning: --url carries a password"
URL_WARNING_JSON = '{"warning": "warning: --url carries a password'


def error_lines(err: str) -> list[str]:
    """stderr's lines after the one warning of a password in --url, if any."""
    lines = err.splitlines()
    if lines and lines[0].startswith((URL_WARNING, URL_WARNING_JSON)):
        assert PASSWORD not in lines[0]
        return lines[1:]
    return lines


def only_line(ran: Ran) -> str:
    """The one line an error prints on stderr (nothing on stdout, no traceback)."""
    assert "Traceback" not in ran.err and ran.out == "", ran
    lines = error_lines(ran.err)
    assert len(lines) == 1, ran.err
    assert lines[0].startswith("taskhub-pg: "), ran.err
    assert PASSWORD not in lines[0]
    return lines[0]


def only_json(ran: Ran) -> dict[str, Any]:
    """The one JSON object an error prints on stderr under --json."""
    assert ran.out == "" and "Traceback" not in ran.err, ran
    lines = error_lines(ran.err)
    assert len(lines) == 1, ran.err
    record: dict[str, Any] = json.loads(lines[0])
    assert set(record) == {"error", "exit_code", "hint"}
    assert record["exit_code"] == ran.code
    assert PASSWORD not in lines[0]
    return record
