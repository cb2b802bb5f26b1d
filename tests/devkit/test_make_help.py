"""`make help` (and a bare `make`) print the Makefile's header: every target a
developer may call is named there, so the header cannot fall behind the file."""

from __future__ import annotations

import re
import subprocess

from tests.support.paths import REPO


def make(*args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def test_every_target_is_in_make_help() -> None:
    phony = re.search(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert phony is not None
    shown = make("help")
    missing = [t for t in phony.group(1).split() if t != "help" and f"make {t}" not in shown]
    assert missing == []
    assert not any(line.startswith("#") for line in shown.splitlines())


def test_a_bare_make_prints_the_help() -> None:
    assert make() == make("help")
