"""Debian's PgBouncer in front of a server, in one pool mode (the tests, the
pooler drill and bench.pooler_modes).

    with pgbouncer(server_url, "transaction") as bouncer:
        pooled = bouncer.url(database_url)        # the same login, through the pooler
        visits = bouncer.visit_servers(pooled)    # every server connection of that pool

It runs as the `postgres` OS user (PgBouncer refuses root), from a temp
folder of its own, and is stopped at the end with no process left. It
listens on a unix socket in that folder only, which is mode 0700 as the
suite's cluster's is (provider/testing/embedded_pg.py): only root and the
server's OS user reach it, so its trusted logins open nothing to other
local users. The port only names the socket file.

Logins are trusted (no password asked); PgBouncer learns each role from the
server with its default auth_query (pg_shadow), as the URL's user, so the
roles a test creates work at once. It logs in to the server as the client
did: a server that trusts local logins (the suite's cluster) needs no
password; for one that asks, the URL's own password is given to PgBouncer
for that user only.

default_pool_size is small (4 by default), so that in transaction mode the
clients share a few server connections, as behind a production pooler.
The released runtime's driver (sqlx) sends extra_float_digits at startup,
which PgBouncer refuses unless told to ignore it, as deployments do; the
provider's `options` (its statement timeout) is not ignored: a pooler that
drops it silently would leave the server without a timeout.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from provider.testing.embedded_pg import SERVICE_USER, free_port

PGBOUNCER = "/usr/sbin/pgbouncer"
PoolMode = Literal["session", "transaction"]
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
# A client waits at most this long for a server connection (PgBouncer's
# default is 120 s): a pool held by clients in open transactions fails the
# waiting client in time, instead of hanging a test.
QUERY_WAIT_TIMEOUT_S = 15
# The settings a migration sets for its run, and the statement timeout the
# provider sets per session or per call: what must never stay behind.
WATCHED_SETTINGS = ("lock_timeout", "check_function_bodies", "statement_timeout", "search_path")
VISIT = "SELECT pg_backend_pid(), " + ", ".join(
    f"current_setting('{name}')" for name in WATCHED_SETTINGS
)
ADVISORY_LOCKS = """
SELECT l.pid, l.classid, l.objid, l.objsubid, l.granted
  FROM pg_catalog.pg_locks AS l
 WHERE l.locktype = 'advisory'
   AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
 ORDER BY l.pid
"""


class PgBouncerError(RuntimeError):
    """PgBouncer could not be started, or did not answer."""


@dataclass(frozen=True)
class ServerVisit:
    """One server connection of a pool, as a client transaction found it."""

    pid: int
    settings: dict[str, str]  # WATCHED_SETTINGS -> value


def available() -> bool:
    return Path(PGBOUNCER).exists()


def _as_service_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SERVICE_USER, "--", *command] if os.geteuid() == 0 else command


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        shutil.chown(path, user=SERVICE_USER, group=SERVICE_USER)


def _quoted(value: str) -> str:
    """A value in PgBouncer's userlist: double quotes, doubled inside."""
    return '"' + value.replace('"', '""') + '"'


@dataclass
class PgBouncer:
    """One PgBouncer process: start(), then url() and the admin console; stop()."""

    base_dir: Path
    server_url: str
    mode: PoolMode
    pool_size: int
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_file(self) -> Path:
        return self.base_dir / "pgbouncer.log"

    @property
    def pid_file(self) -> Path:
        return self.base_dir / "pgbouncer.pid"

    def url(self, server_url: str | None = None, database: str | None = None) -> str:
        """`server_url`'s login (user, database, application_name) through this
        PgBouncer; `database` instead of its own. No password: PgBouncer trusts
        its clients, and a password in a URL ends up in output. URL syntax,
        which both libpq and the runtime's driver take: `host=` names the
        socket's folder, `localhost` is a placeholder."""
        params = conninfo_to_dict(server_url or self.server_url)
        user = quote(str(params.get("user", SERVICE_USER)), safe="")
        database = quote(database or str(params.get("dbname", user)), safe="")
        query = f"host={quote(str(self.base_dir), safe='/')}"
        if "application_name" in params:
            query += f"&application_name={quote(str(params['application_name']), safe='')}"
        return f"postgresql://{user}@localhost:{self.port}/{database}?{query}"

    def start(self) -> PgBouncer:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.base_dir.chmod(0o700)  # the socket's only guard, as the cluster's
        _own(self.base_dir)
        for name, text in (("pgbouncer.ini", self._ini()), ("userlist.txt", self._userlist())):
            path = self.base_dir / name
            path.write_text(text)
            path.chmod(0o600)
            _own(path)
        with self.log_file.open("ab") as output:
            self.process = subprocess.Popen(
                _as_service_user([PGBOUNCER, str(self.base_dir / "pgbouncer.ini")]),
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._answers_now():
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise PgBouncerError(
                    f"PgBouncer did not answer on its admin console within "
                    f"{START_TIMEOUT_S:.0f} s\n{self._log_tail()}"
                )
            time.sleep(0.05)  # a process starting: nothing to wait on but its socket
        return self

    def _answers_now(self) -> bool:
        try:
            return self._answers()
        except psycopg.OperationalError:
            return False

    def stop(self) -> None:
        """Immediate shutdown (SIGTERM to PgBouncer itself, not to runuser);
        the process is waited for, so none is left."""
        if self.process is None:
            return
        if self.process.poll() is None:
            pid = self._pid()
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                self.process.kill()
                self.process.wait()
        self.process = None

    # -- the admin console ----------------------------------------------------

    def admin(self) -> psycopg.Connection[Any]:
        """A connection to the admin console (SHOW ... works; simple protocol only)."""
        url = self.url(database="pgbouncer")
        return psycopg.connect(url, autocommit=True, prepare_threshold=None)

    def show(self, what: str) -> list[dict[str, Any]]:
        """SHOW <what> on the admin console, rows as dicts."""
        with closing(self.admin()) as conn, conn.cursor() as cur:
            cur.execute(f"SHOW {what}")  # a console verb, no input
            names = [column.name for column in cur.description or []]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def reset_servers(self, database: str) -> None:
        """Close every server connection of `database`'s pools now (KILL, then
        RESUME): the next clients get fresh sessions. For between the
        drill's parts, when no client is connected."""
        with closing(self.admin()) as conn:
            conn.execute(f'KILL "{database}"')  # a console verb
            conn.execute(f'RESUME "{database}"')

    def server_pids(self, user: str, database: str) -> set[int]:
        """The server pids of the pool of (user, database), as PgBouncer lists them."""
        return {
            int(row["remote_pid"])
            for row in self.show("SERVERS")
            if row["user"] == user and row["database"] == database
        }

    def visit_servers(self, url: str) -> list[ServerVisit]:
        """Every server connection of `url`'s pool: as many client transactions
        as the pool has servers, all open at once (so each holds another
        server), each reading its pid and WATCHED_SETTINGS. Every server
        PgBouncer lists for the pool is among them (AssertionError if not)."""
        visits: list[ServerVisit] = []
        with ExitStack() as stack:
            for _ in range(self.pool_size):
                conn = stack.enter_context(psycopg.connect(url, prepare_threshold=None))
                row = conn.execute(VISIT).fetchone()  # BEGIN: the server stays ours
                assert row is not None
                visits.append(ServerVisit(int(row[0]), _settings(row)))
            params = conninfo_to_dict(url)
            listed = self.server_pids(str(params["user"]), str(params["dbname"]))
        visited = {visit.pid for visit in visits}
        assert len(visited) == self.pool_size, f"{self.pool_size} transactions shared servers"
        assert listed <= visited, f"servers not visited: {sorted(listed - visited)}"
        return visits

    # -- inside ---------------------------------------------------------------

    def _ini(self) -> str:
        server = conninfo_to_dict(self.server_url)
        target = make_conninfo(host=server.get("host", "localhost"), port=server.get("port"))
        return f"""\
;; written by devkit/pgbouncer.py
[databases]
* = {target}

[pgbouncer]
pool_mode = {self.mode}
listen_addr =
listen_port = {self.port}
unix_socket_dir = {self.base_dir}
unix_socket_mode = 0700
auth_type = trust
auth_file = {self.base_dir / "userlist.txt"}
auth_user = {server.get("user", SERVICE_USER)}
admin_users = {server.get("user", SERVICE_USER)}
ignore_startup_parameters = extra_float_digits
default_pool_size = {self.pool_size}
reserve_pool_size = 0
query_wait_timeout = {QUERY_WAIT_TIMEOUT_S}
max_client_conn = 500
pidfile = {self.pid_file}
logfile =
log_connections = 0
log_disconnections = 0
"""

    def _userlist(self) -> str:
        server = conninfo_to_dict(self.server_url)
        user = str(server.get("user", SERVICE_USER))
        return f"{_quoted(user)} {_quoted(str(server.get('password', '')))}\n"

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise PgBouncerError(f"PgBouncer exited ({self.process.returncode})")
        self.show("VERSION")
        return True

    def _pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _log_tail(self) -> str:
        return self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""


@contextmanager
def pgbouncer(server_url: str, mode: PoolMode, pool_size: int = 4) -> Iterator[PgBouncer]:
    """PgBouncer in `mode` in front of the server of `server_url`, started,
    and stopped and its folder removed afterwards."""
    if not available():
        raise PgBouncerError(f"{PGBOUNCER} is missing: apt-get install -y pgbouncer")
    base = Path(tempfile.mkdtemp(prefix="taskhub-pgb-", dir="/tmp"))
    bouncer = PgBouncer(base, server_url, mode, pool_size, free_port())
    try:
        yield bouncer.start()
    finally:
        bouncer.stop()
        shutil.rmtree(base, ignore_errors=True)


def advisory_locks(direct_url: str) -> list[tuple[Any, ...]]:
    """The advisory locks held or awaited in `direct_url`'s database (pid,
    key parts, granted), read on the server directly."""
    with psycopg.connect(direct_url, autocommit=True) as conn:
        return conn.execute(ADVISORY_LOCKS).fetchall()


def fresh_settings(direct_url: str) -> dict[str, str]:
    """WATCHED_SETTINGS as a new session of `direct_url`'s login finds them:
    what every pooled server connection must still show."""
    with psycopg.connect(direct_url, autocommit=True) as conn:
        row = conn.execute(VISIT).fetchone()
        assert row is not None
        return _settings(row)


def _settings(row: tuple[Any, ...]) -> dict[str, str]:
    """WATCHED_SETTINGS from a VISIT row."""
    return dict(zip(WATCHED_SETTINGS, (str(value) for value in row[1:]), strict=True))
