"""What `taskhub-pg metrics` exposes to the network (issue 36): without
--host it answers this machine only; a --host beyond loopback is refused
unless every request must send a bearer token (--token-file) or the operator
passed --insecure-no-auth (served with a warning); and a burst of requests while
the database is slow is one bounded read, not a connection each."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from devkit.roles import operator_of
from devkit.waiting import wait_until
from provider.testing.embedded_pg import free_port
from tests.support.metrics_server import metrics_server
from tests.support.network import non_loopback_address

REQUESTS = 30
READ_TIMEOUT_S = 2  # the server's --timeout: each read of the hub ends by then


def port_of(base: str) -> int:
    return int(base.rsplit(":", 1)[1])


def reachable(address: str, port: int) -> bool:
    """Does a TCP connection to address:port open? (refused: no)"""
    try:
        with socket.create_connection((address, port), timeout=5):
            return True
    except ConnectionRefusedError:
        return False


def stopped_log(server: subprocess.Popen[str]) -> str:
    server.terminate()
    return server.communicate(timeout=10)[1]


def test_without_host_the_server_answers_this_machine_only(
    database_url: str, hub_schema: str
) -> None:
    with non_loopback_address() as address:
        with metrics_server(database_url, hub_schema, host=None) as (base, server):
            port = port_of(base)
            assert reachable("127.0.0.1", port)
            exposed = reachable(address, port)
            log = stopped_log(server)
        assert not exposed, f"served on {address}:{port}, which other machines can reach"
        assert "without authentication" not in log

        # The same address is reachable when --host asks for it: the check
        # above could see a server listening there. That start is warned of.
        with metrics_server(
            database_url, hub_schema, host="0.0.0.0", options=("--insecure-no-auth",)
        ) as (base, server):
            assert reachable(address, port_of(base))
            log = stopped_log(server)
    (warning,) = [line for line in log.splitlines() if "without authentication" in line]
    assert "WARNING" in warning and "0.0.0.0" in warning


def reading(sql: psycopg.Connection[Any], role: str) -> int:
    """How many of the role's sessions run a statement now (one that waits
    for the lock does; a session closing after its read does not)."""
    row = sql.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE usename = %s AND state = 'active'", [role]
    ).fetchone()
    return int(row[0]) if row else 0


def answer(url: str, token: str | None = None) -> tuple[int, str]:
    """Status and body, sending `token` as a bearer token when given."""
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def test_requests_during_a_held_lock_share_one_bounded_read(
    database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    """30 scrapes and probes while a lock holds the hub's queue: one
    connection reads (the others wait for its result), and the read ends at
    the statement timeout, the lock still held: every request is answered,
    saying the hub is down."""
    with (
        operator_of(database_url, hub_schema) as reader,
        metrics_server(reader.url, hub_schema, options=("--timeout", str(READ_TIMEOUT_S))) as (
            base,
            server,
        ),
    ):
        paths = ["/metrics", "/healthz"] * (REQUESTS // 2)
        most = 0
        with psycopg.connect(database_url) as holder:
            holder.execute(f'LOCK TABLE "{hub_schema}".orchestrator_queue IN ACCESS EXCLUSIVE MODE')
            with ThreadPoolExecutor(REQUESTS) as pool:
                answers = [pool.submit(answer, base + path) for path in paths]

                def settled() -> bool:
                    nonlocal most
                    most = max(most, reading(sql, reader.name))
                    return most > 1 or all(sent.done() for sent in answers)

                wait_until(settled, timeout_s=60, message="every request answered")
                answered_under_lock = all(sent.done() for sent in answers)
                holder.rollback()  # whatever still waits for the lock gets it now
                results = [sent.result() for sent in answers]
        log = stopped_log(server)
    assert most == 1, f"{most} connections read the hub at once"
    assert answered_under_lock, "a read outlived its statement timeout"
    for path, (status, body) in zip(paths, results, strict=True):
        if path == "/metrics":
            assert status == 200 and f'taskhub_up{{schema="{hub_schema}"}} 0.0' in body
        else:
            assert status == 503 and '"status": "down"' in body
    assert "canceling statement due to statement timeout" in log


@pytest.mark.parametrize("host", ["localhost", "::1"])
def test_loopback_hosts_are_served_without_a_warning(
    database_url: str, hub_schema: str, host: str
) -> None:
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    with metrics_server(database_url, hub_schema, host=host) as (_, server):
        log = stopped_log(server)
    assert "without authentication" not in log


def run_metrics(url: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`taskhub-pg metrics` that is expected to stop by itself (a refusal)."""
    return subprocess.run(
        [sys.executable, "-m", "provider", "metrics", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DATABASE_URL": url},
    )


def test_a_host_beyond_loopback_without_a_token_is_refused_and_nothing_listens(
    database_url: str, hub_schema: str
) -> None:
    """The defect: 0.2.0 served 0.0.0.0 to anyone, with a warning in a log."""
    port = free_port()
    done = run_metrics(database_url, "--host", "0.0.0.0", "--port", str(port),
                       "--schema", hub_schema)  # fmt: skip
    assert done.returncode == 2, done
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    assert "no token is configured" in line and "--token-file" in line
    assert not reachable("127.0.0.1", port)


def test_with_a_token_file_every_request_must_send_it(
    database_url: str, hub_schema: str, tmp_path: Path
) -> None:
    token = secrets.token_urlsafe(24)
    token_file = tmp_path / "metrics-token"
    token_file.write_text(token + "\n")
    with non_loopback_address() as address, metrics_server(
        database_url, hub_schema, host="0.0.0.0",
        options=("--token-file", str(token_file)), token=token,
    ) as (base, server):  # fmt: skip
        served = f"http://{address}:{port_of(base)}"
        answers = {
            (path, sent): answer(served + path, value)
            for path in ("/metrics", "/healthz")
            for sent, value in (("none", None), ("wrong", token[:-1] + "x"), ("right", token))
        }
        log = stopped_log(server)
    for (path, sent), (status, body) in answers.items():
        if sent == "right":
            assert status == 200, (path, body)
        else:
            assert status == 401 and token not in body, (path, sent, status)
    assert f'taskhub_up{{schema="{hub_schema}"}} 1.0' in answers[("/metrics", "right")][1]
    assert "without authentication" not in log and token not in log


@pytest.mark.parametrize(
    ("content", "says"),
    [("", "at least 16 characters"), ("short", "at least 16 characters"),
     ("a token with spaces in it", "without spaces"),
     (b"S3cretTokenPart\xe9more", "not UTF-8 text")],
)  # fmt: skip
def test_a_token_file_that_cannot_serve_is_refused(
    database_url: str, hub_schema: str, tmp_path: Path, content: str | bytes, says: str
) -> None:
    """Refused in one line that quotes no byte of the file."""
    token_file = tmp_path / "metrics-token"
    raw = content if isinstance(content, bytes) else content.encode()
    token_file.write_bytes(raw)
    port = free_port()
    done = run_metrics(database_url, "--port", str(port), "--schema", hub_schema,
                       "--token-file", str(token_file))  # fmt: skip
    assert done.returncode == 2 and says in done.stderr, done
    secret = raw.decode("latin-1").strip()
    assert not secret or secret not in done.stderr
    assert "S3cret" not in done.stderr and "0xe9" not in done.stderr  # 0.2.0's decode error
    assert not reachable("127.0.0.1", port)


def test_a_loopback_server_answers_only_requests_that_name_this_machine(
    database_url: str, hub_schema: str
) -> None:
    """A web page that rebinds its own name to 127.0.0.1 sends its name as the
    Host: it gets a 400, and the hub is not read for it."""
    with metrics_server(database_url, hub_schema) as (base, server):
        statuses = {}
        for host in ("127.0.0.1", "localhost:9464", "evil.example", "evil.example:9464"):
            request = urllib.request.Request(base + "/metrics", headers={"Host": host})
            try:
                with urllib.request.urlopen(request, timeout=60) as response:
                    statuses[host] = response.status
            except urllib.error.HTTPError as refused:
                statuses[host] = refused.code
        stopped_log(server)
    assert statuses == {
        "127.0.0.1": 200, "localhost:9464": 200, "evil.example": 400, "evil.example:9464": 400,
    }  # fmt: skip
