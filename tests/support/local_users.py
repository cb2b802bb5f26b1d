"""Another local OS user, for tests of what such a user can reach: created
with useradd for one test, removed after it (root only: the test skips
otherwise)."""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from provider.testing.embedded_pg import client_tool

# useradd and userdel refuse, rather than wait, while another process holds
# /etc/passwd's lock: every test process on this machine (parallel workers,
# other checkouts' suites) takes this lock first, and waits on it.
USERS_LOCK = Path(tempfile.gettempdir()) / "taskhub-pg-local-users.lock"


def _user_command(command: list[str]) -> None:
    with USERS_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(command)}: {done.stderr.strip()}")


@pytest.fixture
def stranger() -> Iterator[str]:
    """The name of a fresh OS user with no home, no group of ours, no password."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("creating another OS user needs root and useradd")
    name = f"thpg{secrets.token_hex(4)}"
    _user_command(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name])
    try:
        yield name
    finally:
        _user_command(["userdel", name])


def psql() -> str:
    return client_tool("psql")


def run_as(user: str, command: list[str]) -> subprocess.CompletedProcess[str]:
    """`command` run as OS user `user` (from a folder every user may enter)."""
    return subprocess.run(
        ["runuser", "-u", user, "--", *command], cwd="/", capture_output=True, text=True, timeout=60
    )


def psql_as(user: str, url: str, sql: str) -> subprocess.CompletedProcess[str]:
    """`sql` run by psql as OS user `user` on `url`, never prompting for a password."""
    return run_as(user, [psql(), "-X", "-w", "-At", "-d", url, "-c", sql])
