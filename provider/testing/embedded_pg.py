"""A private PostgreSQL cluster started from the machine's server binaries.

Used by `make run` and the test suite when `DATABASE_URL` is unset. PostgreSQL
refuses to run as root, so when we are root the cluster is initialised and run
as the `postgres` OS user (`runuser -u postgres --`), with its data under /tmp
where that user can reach it.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SERVICE_USER = "postgres"
PG_CTL_TIMEOUT_S = 120  # how long pg_ctl waits for a start or a restart


class EmbeddedPostgresError(RuntimeError):
    """The embedded cluster could not be found, initialised or started."""


def find_bin_dir() -> Path:
    """`PG_BIN` if set, else the newest /usr/lib/postgresql/*/bin, else pg_ctl on PATH."""
    if env := os.environ.get("PG_BIN"):
        return Path(env)
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
    )
    if candidates:
        return Path(candidates[-1])
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).resolve().parent
    raise EmbeddedPostgresError(
        "no PostgreSQL server binaries found: install them (apt-get install -y postgresql) "
        "or set DATABASE_URL / PG_BIN"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_service_user(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", SERVICE_USER, "--", *cmd]
    return cmd


def _chown_to_service_user(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user=SERVICE_USER, group=SERVICE_USER)


@dataclass
class EmbeddedPostgres:
    """One cluster: `start()` creates and starts it, `stop()` stops it and removes its files."""

    base_dir: Path
    port: int
    bin_dir: Path
    keep_data: bool = False

    @classmethod
    def create(cls, base_dir: Path | None = None, port: int | None = None) -> EmbeddedPostgres:
        if base_dir is None:
            base_dir = Path(tempfile.mkdtemp(prefix="taskhub-pg-", dir="/tmp"))
        return cls(base_dir=base_dir, port=port or free_port(), bin_dir=find_bin_dir())

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "server.log"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def is_initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def is_running(self) -> bool:
        status = subprocess.run(
            _as_service_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "status"]),
            capture_output=True,
        )
        return status.returncode == 0

    def start(self) -> str:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.base_dir.chmod(0o755)
        _chown_to_service_user(self.base_dir)
        if not self.is_initialised():
            self._run(
                [
                    str(self.bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    "-N",
                ],
                "initdb",
            )
        if not self.is_running():
            # A throwaway cluster: durability off, enough connections for the
            # concurrency tests and benchmarks.
            options = (
                f"-p {self.port} -k {self.base_dir} -c listen_addresses=127.0.0.1 "
                "-c fsync=off -c full_page_writes=off -c synchronous_commit=off "
                "-c max_connections=200"
            )
            self._run(
                [
                    str(self.bin_dir / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-l",
                    str(self.log_file),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "60",
                    "start",
                ],
                "pg_ctl start",
            )
        return self.url

    def restart(self, mode: str = "fast") -> None:
        """Restart the server. `fast` cuts open connections after a shutdown
        checkpoint; `immediate` kills every backend at once, and the server
        goes through crash recovery (what a crash or a failover looks like)."""
        self._run(
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data_dir),
                "-l",
                str(self.log_file),  # else the server keeps our stdout pipe open
                "-m",
                mode,
                "-w",
                "-t",
                str(PG_CTL_TIMEOUT_S),
                "restart",
            ],
            f"pg_ctl restart -m {mode}",
        )

    def stop(self) -> None:
        if self.is_initialised() and self.is_running():
            self._run(
                [
                    str(self.bin_dir / "pg_ctl"),
                    "-D",
                    str(self.data_dir),
                    "-m",
                    "fast",
                    "-w",
                    "stop",
                ],
                "pg_ctl stop",
            )
        if not self.keep_data:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _run(self, cmd: list[str], what: str) -> None:
        done = subprocess.run(_as_service_user(cmd), capture_output=True, text=True)
        if done.returncode != 0:
            log = self.log_file.read_text() if self.log_file.exists() else ""
            raise EmbeddedPostgresError(
                f"{what} failed ({done.returncode}): {done.stderr.strip()}\n{log[-2000:]}"
            )
