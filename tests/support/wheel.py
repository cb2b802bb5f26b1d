"""The wheel as a user gets it: built once per test session from a clean copy
of the checkout, and installed once into a fresh virtualenv outside it
(tests/deploy/test_wheel.py, tests/ops/test_docs_shell_blocks.py)."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import REPO


def run(*args: str, cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@dataclass(frozen=True)
class WheelBuild:
    wheel: Path
    work: Path
    backend_output: list[str]  # what setuptools printed while building


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every test process of this session sees: under xdist, the
    session's folder above each worker's own; without it, this one's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def held(lock_file: Path) -> Iterator[None]:
    """An exclusive lock across the session's test processes (the first to
    take it builds; the others wait, then find the build done)."""
    with lock_file.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> WheelBuild:
    """The wheel, built once per session however the tests of this module are
    spread over test processes (a build takes 15-30 s, under load more)."""
    work = shared_folder(tmp_path_factory) / "taskhub-wheel"
    record = work / "backend_output.json"
    with held(shared_folder(tmp_path_factory) / "taskhub-wheel.lock"):
        if not record.exists():
            work.mkdir(exist_ok=True)
            record.write_text(json.dumps(build_wheel(work)))
    (wheel,) = work.glob("taskhub_pg-*.whl")
    return WheelBuild(wheel, work, json.loads(record.read_text()))


def build_wheel(work: Path) -> list[str]:
    """Build into `work`; what the backend printed."""
    # Built from a clean copy: no stale build/ of the working tree gets into the
    # wheel, and no build of the working tree's meets this one.
    source = work / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "results"
        ),
    )
    # Verbose, for the backend's output; without PYTHONDONTWRITEBYTECODE, under
    # which setuptools warns that it does not byte-compile.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-v", "-w", str(work)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # in the order printed
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    return backend_lines(done.stdout)


def backend_lines(output: str) -> list[str]:
    """The lines after pip installed the build requirements: what the build
    backend printed (pip's own lines before them are about its configuration)."""
    lines = output.splitlines()
    done = "Installing build dependencies: finished"
    starts = [n for n, line in enumerate(lines) if done in line]
    assert starts, output[-2000:]
    return lines[starts[0] + 1 :]


def wheel_venv(
    wheel_build: WheelBuild, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A virtualenv with the wheel, its runtime and schedules extras (and
    pytest, for the test kit page's example) installed, made once per session;
    and a folder of this test process's own, outside the repository, to run it
    from."""
    venv = wheel_build.work / "venv"
    python = venv / "bin" / "python"
    with held(wheel_build.work / "venv.lock"):
        if not (venv / "installed").exists():
            run(sys.executable, "-m", "venv", str(venv), cwd=wheel_build.work)
            # The runtime extra: the getting-started page's program runs duroxide;
            # schedules: the runbook's cron schedules (tests/ops/test_docs_shell_blocks.py).
            wanted = f"{wheel_build.wheel}[runtime,schedules]"
            run(str(python), "-m", "pip", "install", "-q", wanted, "pytest", cwd=wheel_build.work)
            (venv / "installed").touch()
    outside = tmp_path_factory.mktemp("elsewhere")
    return python, outside
