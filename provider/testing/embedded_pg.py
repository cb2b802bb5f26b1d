"""A private PostgreSQL cluster started from the machine's server binaries.

Used by `make run` and the test suite when `DATABASE_URL` is unset. PostgreSQL
refuses to run as root, so when we are root the cluster is initialised and run
as the `postgres` OS user (`runuser -u postgres --`), with its data under /tmp
where that user can reach it.

The cluster listens on no TCP port at all: only on a unix socket in its own
folder, which is mode 0700 and owned by the server's OS user. Logins are
trusted (the tests connect as the superuser and as roles they create), so
the folder's mode is the boundary: the server's user and root reach the
socket, any other local user does not (the kernel refuses before PostgreSQL
sees the login). Its URLs work for psycopg, SQLAlchemy and Alembic, psql,
pg_dump and the duroxide runtime (Rust sqlx), as
postgresql://postgres@localhost:5432/postgres?host=/tmp/taskhub-pg-xxxx.
"""

from __future__ import annotations

import glob
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

SERVICE_USER = "postgres"
PG_CTL_TIMEOUT_S = 120  # how long pg_ctl waits for a start or a restart
# The port names the socket file (.s.PGSQL.5432); no TCP port is opened, so
# clusters in different folders never collide on it.
SOCKET_PORT = 5432
# A unix socket's path is at most 107 bytes (sun_path, less its NUL).
MAX_SOCKET_PATH = 107
# Only local (unix socket) logins, trusted: the folder's mode guards the socket.
# TCP logins are refused even if a setting ever opens a TCP port.
HBA = """# Written by provider/testing/embedded_pg.py at every start.
# Unix socket logins only; the socket's folder is 0700, so only the server's
# OS user and root can reach it.
local all all trust
host  all all all reject
"""


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


def client_tool(name: str) -> str:
    """A client tool (psql, pg_dump) of the server's own version when its bin
    folder has one, else the one on PATH: a pg_dump older than the server
    refuses to dump it, and psql's backslash commands follow its catalogues."""
    try:
        own = find_bin_dir() / name
    except EmbeddedPostgresError:
        own = None
    if own is not None and own.exists():
        return str(own)
    return shutil.which(name) or name


def free_port() -> int:
    """A TCP port nothing listens on, on 127.0.0.1: for the tests' own servers
    (a dashboard, a metrics endpoint), not for the cluster, which has none."""
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


def listen_addresses_of(postmaster_opts: str) -> str:
    """The listen_addresses a running server was started with ('localhost', its
    default, when not given): '' means no TCP port."""
    addresses = "localhost"
    for word in shlex.split(postmaster_opts):
        if word.startswith("listen_addresses="):
            addresses = word.partition("=")[2]
    return addresses


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
        return cls(base_dir=base_dir, port=port or SOCKET_PORT, bin_dir=find_bin_dir())

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "server.log"

    @property
    def socket_dir(self) -> Path:
        return self.base_dir

    @property
    def socket_path(self) -> Path:
        return self.socket_dir / f".s.PGSQL.{self.port}"

    @property
    def url(self) -> str:
        """The superuser's URL. `host=` names the socket's folder; the
        `localhost` before it is a placeholder, which libpq and sqlx ignore
        for `host=` but without which sqlx (duroxide) refuses the URL."""
        folder = quote(str(self.socket_dir), safe="/")
        return f"postgresql://postgres@localhost:{self.port}/postgres?host={folder}"

    def is_initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def is_running(self) -> bool:
        status = subprocess.run(
            _as_service_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "status"]),
            capture_output=True,
        )
        return status.returncode == 0

    def start(self) -> str:
        if len(str(self.socket_path).encode()) > MAX_SOCKET_PATH:
            raise EmbeddedPostgresError(
                f"the socket path {self.socket_path} is longer than {MAX_SOCKET_PATH} bytes:"
                " choose a shorter folder (DEV_DIR)"
            )
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.base_dir.chmod(0o700)  # the socket's only guard: see the module's docstring
        _chown_to_service_user(self.base_dir)
        if not self.is_initialised():
            self._run(
                [
                    str(self.bin_dir / "initdb"),
                    "-D",
                    str(self.data_dir),
                    "-U",
                    "postgres",
                    "--auth-local=trust",
                    "--auth-host=reject",
                    "-E",
                    "UTF8",
                    "--locale=C.UTF-8",
                    "-N",
                ],
                "initdb",
            )
        if self.is_running() and self._listens_on_tcp():
            self._stop_server()  # started by an older version, on 127.0.0.1: start it anew
        if not self.is_running():
            self._write_hba()
            # A throwaway cluster: no TCP port, durability off, enough
            # connections for the concurrency tests and benchmarks.
            options = (
                f"-p {self.port} -k {self.socket_dir} -c listen_addresses='' "
                "-c unix_socket_permissions=0700 "
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
            self._stop_server()
        if not self.keep_data:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _stop_server(self) -> None:
        self._run(
            [str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", "fast", "-w", "stop"],
            "pg_ctl stop",
        )

    def _listens_on_tcp(self) -> bool:
        opts = self.data_dir / "postmaster.opts"
        return opts.exists() and listen_addresses_of(opts.read_text()) != ""

    def _write_hba(self) -> None:
        """Our pg_hba.conf, also over a cluster initialised by an older version
        (which trusted every TCP login)."""
        hba = self.data_dir / "pg_hba.conf"
        hba.write_text(HBA)
        hba.chmod(0o600)
        _chown_to_service_user(hba)

    def _run(self, cmd: list[str], what: str) -> None:
        done = subprocess.run(_as_service_user(cmd), capture_output=True, text=True)
        if done.returncode != 0:
            log = self.log_file.read_text() if self.log_file.exists() else ""
            raise EmbeddedPostgresError(
                f"{what} failed ({done.returncode}): {done.stderr.strip()}\n{log[-2000:]}"
            )
