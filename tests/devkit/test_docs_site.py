"""The documentation site builds with no warning (`make docs`, strict), and
a broken link fails the build. No database."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow


def build(checkout: Path, site: Path) -> subprocess.CompletedProcess[str]:
    mkdocs = shutil.which("mkdocs") or str(REPO / ".venv" / "bin" / "mkdocs")
    if not Path(mkdocs).exists():
        pytest.skip("mkdocs is not installed (the docs dependency group)")
    return subprocess.run(
        [mkdocs, "build", "--site-dir", str(site)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )


def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    done = build(REPO, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert [line for line in done.stderr.splitlines() if not line.startswith("INFO")] == []
    built = tmp_path / "site"
    assert (built / "index.html").is_file()
    api = (built / "reference" / "python-api" / "index.html").read_text()
    assert "ActivityWorker" in api and "lock_timeout" in api  # read from the docstrings
    # The pages written from the code: every verb, every function of sql/head/.
    cli = (built / "reference" / "cli" / "index.html").read_text()
    assert "taskhub-pg upgrade" in cli and "--runtime-role" in cli
    functions = (built / "reference" / "sql" / "index.html").read_text()
    assert "fetch_orchestration_item" in functions and "taskhub_grant_runtime_role" in functions
    settings = (built / "reference" / "settings" / "index.html").read_text()
    assert "dead_letter_after_attempts" in settings and "prepare_threshold" in settings
    assert "max_idle_poll_ms" in settings
    codes = (built / "reference" / "errors" / "index.html").read_text()
    assert "TH001" in codes and "INTERRUPTED" in codes and "RetryableError" in codes


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copy(REPO / "mkdocs.yml", checkout)
    shutil.copytree(REPO / "docs", checkout / "docs")
    for folder in ("provider", "devkit", "sql", "migrations"):
        shutil.copytree(REPO / folder, checkout / folder)
    with (checkout / "docs" / "index.md").open("a") as index:
        index.write("\nSee [the gone page](no-such-page.md).\n")
    done = build(checkout, tmp_path / "site")
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "no-such-page.md" in said and "Aborted with 1 warnings" in said
