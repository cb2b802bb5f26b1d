"""A primary and a streaming standby, started by the drill from the machine's
server binaries (PG_BIN, else the newest /usr/lib/postgresql/*/bin) as the
`postgres` OS user, in a folder of their own that is removed at the end.

Each server listens on 127.0.0.1 only, on a port of its own that it keeps
when its role changes, and checks passwords (scram-sha-256): a loopback
port is open to every local user, unlike the suite's socket-only cluster.
A standby is a fresh pg_basebackup of the primary that streams from the
address it was copied through (the replication proxy, so the drill can
stall it), asynchronous as PostgreSQL's default.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from devkit.waiting import wait_until
from drills.failover.wal import lsn
from provider.testing.embedded_pg import (
    _as_service_user,
    _chown_to_service_user,
    find_bin_dir,
    free_port,
)

DATABASE = "drill"
REPLICATION_ROLE = "replicator"
PG_CTL_TIMEOUT_S = 120
STREAMING_TIMEOUT_S = 120.0
# Durability against a power cut is not what is drilled (a process crash
# keeps what reached the OS); every commit still waits for its WAL write.
SERVER_SETTINGS = (
    "-c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    " -c wal_level=replica -c hot_standby=on"
    " -c log_line_prefix='%m [%p] %a: ' -c log_connections=off"
)


class ServerError(RuntimeError):
    """A server of the drill could not be created, started, stopped or promoted."""


@dataclass
class Node:
    """One server: its data folder and port stay, its role changes."""

    name: str
    base: Path  # the drill's folder: sockets, password file
    port: int
    bin_dir: Path

    @property
    def data_dir(self) -> Path:
        return self.base / self.name

    @property
    def log_file(self) -> Path:
        return self.base / f"{self.name}.log"

    def pg_ctl(self, *args: str) -> None:
        run(self.bin_dir / "pg_ctl", "-D", str(self.data_dir), *args)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.base} {SERVER_SETTINGS}"
        self.pg_ctl("-l", str(self.log_file), "-o", options, "-w", "-t", str(PG_CTL_TIMEOUT_S),
                    "start")  # fmt: skip

    def stop(self, mode: str) -> None:
        """`fast`: a shutdown checkpoint, its WAL sent to the standby first;
        `immediate`: every process killed at once, as a crash."""
        self.pg_ctl("-m", mode, "-w", "-t", str(PG_CTL_TIMEOUT_S), "stop")

    def promote(self) -> None:
        self.pg_ctl("-w", "-t", str(PG_CTL_TIMEOUT_S), "promote")

    def postmaster_pid(self) -> int:
        """The running server's postmaster (postmaster.pid's first line)."""
        return int((self.data_dir / "postmaster.pid").read_text().split()[0])

    def is_running(self) -> bool:
        status = subprocess.run(
            _as_service_user([str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "status"]),
            capture_output=True,
        )
        return status.returncode == 0


@dataclass
class ServerPair:
    """The primary and its standby (None between a failover and the rebuild)."""

    base: Path
    bin_dir: Path
    password: str  # the superuser's and the replication role's, hex
    primary: Node
    standby: Node | None = None

    @classmethod
    def create(cls) -> ServerPair:
        """A fresh primary with the drill's database and a replication role; no standby yet."""
        base = Path(tempfile.mkdtemp(prefix="taskhub-failover-", dir="/tmp"))
        base.chmod(0o700)
        _chown_to_service_user(base)
        bin_dir = find_bin_dir()
        pair = cls(base, bin_dir, secrets.token_hex(16), Node("node-1", base, free_port(), bin_dir))
        password_file = base / "superuser-password"
        password_file.write_text(pair.password + "\n")
        _chown_to_service_user(password_file)
        run(bin_dir / "initdb", "-D", str(pair.primary.data_dir), "-U", "postgres",
            f"--pwfile={password_file}", "--auth-host=scram-sha-256", "--auth-local=peer",
            "-E", "UTF8", "--locale=C.UTF-8", "-N")  # fmt: skip
        password_file.unlink()
        # libpq's password file, for pg_basebackup and the standby's
        # primary_conninfo (the password itself is written nowhere else).
        passfile = base / "pgpass"
        passfile.write_text(f"127.0.0.1:*:*:{REPLICATION_ROLE}:{pair.password}\n")
        passfile.chmod(0o600)
        _chown_to_service_user(passfile)
        pair.primary.start()
        with pair.connect(pair.primary, "postgres") as conn:
            conn.execute(
                f"CREATE ROLE {REPLICATION_ROLE} LOGIN REPLICATION PASSWORD '{pair.password}'"
            )
            conn.execute(f"CREATE DATABASE {DATABASE}")
        return pair

    # -- URLs --------------------------------------------------------------

    def url(self, *ports: int, read_write: bool = False) -> str:
        """The superuser's URL to the drill's database on these ports (a
        libpq multi-host URL when several; `read_write`: the writable one)."""
        hosts = ",".join(f"127.0.0.1:{port}" for port in ports)
        query = "?target_session_attrs=read-write" if read_write else ""
        return f"postgresql://postgres:{self.password}@{hosts}/{DATABASE}{query}"

    def node_url(self, node: Node) -> str:
        return self.url(node.port)

    def connect(self, node: Node, database: str = DATABASE) -> psycopg.Connection[Any]:
        return psycopg.connect(
            f"postgresql://postgres:{self.password}@127.0.0.1:{node.port}/{database}",
            autocommit=True,
            connect_timeout=5,
        )

    # -- the standby -------------------------------------------------------

    def build_standby(self, node: Node, replication_port: int) -> None:
        """`node` as a fresh copy of the primary, streaming through
        replication_port (which must lead to the primary), once it streams."""
        shutil.rmtree(node.data_dir, ignore_errors=True)
        conninfo = (
            f"host=127.0.0.1 port={replication_port} user={REPLICATION_ROLE}"
            f" passfile={self.base / 'pgpass'} application_name={node.name}"
        )
        run(self.bin_dir / "pg_basebackup", "-D", str(node.data_dir), "-d", conninfo,
            "-X", "stream", "-c", "fast")  # fmt: skip
        # What -R would write, with only these options: -R copies every option
        # its own libpq knows, which the server's walreceiver (loading the
        # system's libpq, perhaps older) may refuse (sslnegotiation, on 17).
        with (node.data_dir / "postgresql.auto.conf").open("a") as settings:
            settings.write(f"primary_conninfo = '{conninfo}'\n")
        (node.data_dir / "standby.signal").touch()
        for made in ("postgresql.auto.conf", "standby.signal"):
            _chown_to_service_user(node.data_dir / made)
        node.start()
        self.standby = node
        wait_until(
            lambda: self._streams_to(node),
            timeout_s=STREAMING_TIMEOUT_S,
            message=f"{node.name} to stream from {self.primary.name}",
            ignoring=(psycopg.OperationalError,),
        )

    def _streams_to(self, node: Node) -> bool:
        with self.connect(self.primary) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_replication"
                " WHERE application_name = %s AND state = 'streaming'",
                [node.name],
            ).fetchone()
        return row is not None and row[0] == 1

    def promote_standby(self) -> Node:
        """The standby becomes the primary; the old primary has no role until rebuilt."""
        if self.standby is None:
            raise ServerError("no standby to promote")
        promoted, self.standby = self.standby, None
        promoted.promote()
        self.primary = promoted
        return promoted

    # -- positions ---------------------------------------------------------

    def flushed(self, node: Node) -> int:
        return self._position(node, "pg_current_wal_flush_lsn()")

    def replayed(self, node: Node) -> int:
        return self._position(node, "pg_last_wal_replay_lsn()")

    def received(self, node: Node) -> int:
        return self._position(node, "pg_last_wal_receive_lsn()")

    def _position(self, node: Node, function: str) -> int:
        with self.connect(node) as conn:
            row = conn.execute(f"SELECT {function}::text").fetchone()
        if row is None or row[0] is None:
            raise ServerError(f"{node.name}: {function} is NULL")
        return lsn(str(row[0]))

    # -- the end -----------------------------------------------------------

    def remove(self) -> None:
        """Stop whatever runs and remove the folder."""
        for node_dir in sorted(self.base.glob("node-*")):
            node = Node(node_dir.name, self.base, 0, self.bin_dir)
            if node_dir.is_dir() and node.is_running():
                node.stop("immediate")
        shutil.rmtree(self.base, ignore_errors=True)


def run(binary: Path, *args: str) -> None:
    """A server binary, as the server's OS user when we are root."""
    done = subprocess.run(_as_service_user([str(binary), *args]), capture_output=True, text=True)
    if done.returncode != 0:
        raise ServerError(
            f"{binary.name} {' '.join(args[:3])} failed ({done.returncode}):"
            f" {done.stderr.strip()[-1500:]}"
        )
