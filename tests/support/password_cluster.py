"""A throwaway PostgreSQL cluster that checks passwords (scram-sha-256 on
TCP), for the tests of what a wrong password, or a password with `/`, `@`
and spaces in it, leaves in the output. The suite's own cluster trusts every
login, so a wrong password would simply work there.

Built from the machine's server binaries as the test kit builds its own
(provider/testing/embedded_pg.py), with its own settings, so that a change to
how the suite's cluster listens does not change what these tests see."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from provider.testing.embedded_pg import SERVICE_USER, find_bin_dir, free_port


@dataclass(frozen=True)
class PasswordCluster:
    port: int
    admin_password: str  # the superuser postgres's, hex: nothing to encode

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres:{self.admin_password}@127.0.0.1:{self.port}/{database}"

    def add_login(self, role: str, password: str, database: str) -> None:
        """A superuser `role` with `password`, owning a new `database`."""
        with psycopg.connect(self.admin_url(), autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN SUPERUSER PASSWORD {}").format(
                    sql.Identifier(role), sql.Literal(password)
                )
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(database), sql.Identifier(role)
                )
            )


def _as_service_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SERVICE_USER, "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str]) -> None:
    done = subprocess.run(_as_service_user(command), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{command[0]} failed: {done.stderr.strip()}")


@contextmanager
def password_cluster() -> Iterator[PasswordCluster]:
    """Started, and stopped and removed afterwards."""
    bin_dir = find_bin_dir()
    base = Path(tempfile.mkdtemp(prefix="taskhub-pw-", dir="/tmp"))
    data, port = base / "data", free_port()
    admin_password = secrets.token_hex(16)
    try:
        password_file = base / "superuser-password"
        password_file.write_text(admin_password + "\n")
        if os.geteuid() == 0:
            shutil.chown(base, user=SERVICE_USER, group=SERVICE_USER)
            shutil.chown(password_file, user=SERVICE_USER, group=SERVICE_USER)
        _run([
            str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres",
            f"--pwfile={password_file}", "--auth-host=scram-sha-256", "--auth-local=peer",
            "-E", "UTF8", "--locale=C.UTF-8", "-N",
        ])  # fmt: skip
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        _run([
            str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        ])  # fmt: skip
        try:
            yield PasswordCluster(port, admin_password)
        finally:
            _run([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
    finally:
        shutil.rmtree(base, ignore_errors=True)
