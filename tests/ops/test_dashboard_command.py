"""`taskhub-pg dashboard` as an operator starts it: what it refuses to
serve, the warning of --insecure-no-auth, the users it reads, the forwarded
headers it believes, and `taskhub-pg dashboard hash-password`."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from devkit.waiting import wait_until
from provider.cli.app import main
from provider.dashboard.actions import CSRF_COOKIE
from provider.dashboard.passwords import hash_line, parse_line
from provider.testing.embedded_pg import free_port
from tests.ops.test_dashboard_security import dead_letters, the_dead_letter
from tests.support.dashboard import basic, confirmation_of, token_of

PASSWORD = "s3cret /+=@ pass"


@dataclass
class Served:
    base: str
    process: subprocess.Popen[str]
    stderr: str = ""  # what it logged, once stopped


def answer(url: str, headers: dict[str, str] | None = None, data: bytes | None = None) -> int:
    """The HTTP status of a request (an error status too)."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


@contextmanager
def dashboard(
    url: str, schema: str, *options: str, env: dict[str, str] | None = None
) -> Iterator[Served]:
    """`taskhub-pg dashboard` on a free loopback port until the block ends;
    then `stderr` holds what it logged."""
    port = free_port()
    command = [sys.executable, "-m", "provider", "dashboard", "--port", str(port),
               "--url", url, "--schema", schema, *options]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**_environment(), **(env or {})},
    )
    served = Served(f"http://127.0.0.1:{port}", process)

    def up() -> bool:
        if process.poll() is not None:
            pytest.fail(f"the dashboard did not come up: {process.communicate()[1]!r}")
        try:
            answer(served.base + "/static/dashboard.css")
        except OSError:
            return False
        return True

    try:
        wait_until(up, timeout_s=30, interval_s=0.1, message="the dashboard to answer")
        yield served
    finally:
        if process.poll() is None:
            process.terminate()
        served.stderr = process.communicate(timeout=15)[1]


def _environment() -> dict[str, str]:
    """This process's environment without the dashboard's own variables."""
    return {
        key: value for key, value in os.environ.items() if not key.startswith("TASKHUB_DASHBOARD")
    }


def test_a_non_loopback_host_without_sign_in_exits_2_in_one_line(
    database_url: str, busy_hub: str
) -> None:
    for host in ("0.0.0.0", "192.0.2.1"):
        try:
            done = subprocess.run(
                [sys.executable, "-m", "provider", "dashboard", "--host", host,
                 "--port", str(free_port()), "--url", database_url, "--schema", busy_hub],
                capture_output=True, text=True, timeout=30, env=_environment(),
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            pytest.fail(f"--host {host} without sign-in went on serving")
        assert done.returncode == 2, (host, done.returncode, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"--host {host}" in done.stderr and "--insecure-no-auth" in done.stderr
        assert "serving" not in done.stdout


def test_insecure_no_auth_serves_everyone_and_warns_at_each_start(
    database_url: str, busy_hub: str
) -> None:
    for _ in range(2):
        with dashboard(database_url, busy_hub, "--insecure-no-auth") as served:
            assert answer(served.base + "/") == 200
        assert "WARNING provider.dashboard: --insecure-no-auth: anyone who can reach" in (
            served.stderr
        )


def test_hash_password_writes_a_line_the_dashboard_signs_in_with(
    database_url: str,
    busy_hub: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(PASSWORD + "\n"))
    assert main(["dashboard", "hash-password", "alice", "--role", "operator"]) == 0
    written = capsys.readouterr()
    line = written.out.strip()
    assert PASSWORD not in written.out + written.err
    assert parse_line(line).matches(PASSWORD) and parse_line(line).may_act

    env = {"TASKHUB_DASHBOARD_USERS": line}
    with dashboard(database_url, busy_hub, "--allow-actions", env=env) as served:
        assert answer(served.base + "/") == 401
        assert answer(served.base + "/", basic("alice", "wrong")) == 401
        assert answer(served.base + "/", basic("alice", PASSWORD)) == 200
    assert PASSWORD not in served.stderr and "'alice'" in served.stderr  # the wrong try


def test_a_users_file_is_read_and_a_bad_line_exits_2_without_being_printed(
    database_url: str, busy_hub: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    users = tmp_path / "users"
    users.write_text(f"# who\n{hash_line('vera', 'viewer', PASSWORD)}\nbob:operator:hunter2\n")
    users.chmod(0o600)
    code = main(["dashboard", "--users-file", str(users), "--url", database_url])
    message = capsys.readouterr().err
    assert code == 2 and f"{users} line 3" in message and "hunter2" not in message

    users.write_text(hash_line("vera", "viewer", PASSWORD) + "\n")
    with dashboard(database_url, busy_hub, "--users-file", str(users)) as served:
        assert answer(served.base + "/instances") == 401
        assert answer(served.base + "/instances", basic("vera", PASSWORD)) == 200


def test_proxy_options_that_cannot_work_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for options, words in (
        (["--proxy-auth-header", "X-Forwarded-User"], "needs --forwarded-allow-ips"),
        (["--proxy-auth-header", "X User", "--forwarded-allow-ips", "127.0.0.1"], "no header"),
        (["--forwarded-allow-ips", "10.0.0.0/8,proxy"], "'proxy' is no IP address"),
        (["--proxy-operator", "ops"], "needs --proxy-auth-header"),
    ):
        assert main(["dashboard", *options, "--url", "postgresql://x@127.0.0.1:1/x"]) == 2
        assert words in capsys.readouterr().err, options


def test_x_forwarded_for_is_believed_only_from_forwarded_allow_ips(
    database_url: str, busy_hub: str
) -> None:
    """uvicorn believes X-Forwarded-For from 127.0.0.1 by default: the audit
    log then names whoever the client says it is."""
    form = {"Content-Type": "application/x-www-form-urlencoded", "X-Forwarded-For": "203.0.113.9"}
    body = b"dead_letter_id=1&csrf_token=forged"
    with dashboard(database_url, busy_hub, "--allow-actions") as served:
        assert answer(served.base + "/actions/requeue", form, body) == 403
    refused = [line for line in served.stderr.splitlines() if "refused" in line]
    assert refused and "203.0.113.9" not in served.stderr, served.stderr
    assert "from '127.0.0.1'" in refused[0]

    with dashboard(
        database_url, busy_hub, "--allow-actions", "--forwarded-allow-ips", "127.0.0.1"
    ) as served:
        assert answer(served.base + "/actions/requeue", form, body) == 403
    assert "from '203.0.113.9 (via 127.0.0.1)'" in served.stderr, served.stderr


def test_hash_password_refuses_a_password_shorter_than_twelve_characters(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for short in ("abc", "eleven char"):
        monkeypatch.setattr(sys, "stdin", io.StringIO(short + "\n"))
        assert main(["dashboard", "hash-password", "alice"]) == 2
        said = capsys.readouterr()
        assert said.out == "" and len(said.err.strip().splitlines()) == 1, said.err
        assert "give at least 12" in said.err and short not in said.err


SECRET = "a secret the replicas share, 44 chars long.."


def test_a_secret_that_cannot_be_used_exits_2_without_being_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    short, good = tmp_path / "short", tmp_path / "good"
    short.write_text("hunter2 hunter2\n")
    good.write_text(SECRET + "\n")
    url = ["--url", "postgresql://x@127.0.0.1:1/x"]
    for options, words in (
        (["--secret-file", str(short)], f"--secret-file '{short}' holds 15 characters"),
        (["--secret-file", str(tmp_path / "none")], "No such file"),
    ):
        assert main(["dashboard", *options, *url]) == 2
        said = capsys.readouterr().err
        assert words in said and "hunter2" not in said and len(said.splitlines()) == 1, said
    monkeypatch.setenv("TASKHUB_DASHBOARD_SECRET", "hunter2 hunter2")
    assert main(["dashboard", *url]) == 2
    said = capsys.readouterr().err
    assert "TASKHUB_DASHBOARD_SECRET holds 15 characters" in said and "hunter2" not in said
    monkeypatch.setenv("TASKHUB_DASHBOARD_SECRET", SECRET)
    assert main(["dashboard", "--secret-file", str(good), *url]) == 2
    assert "not both" in capsys.readouterr().err


def exchange(
    url: str, headers: dict[str, str], data: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """(status, Set-Cookie, body) of a GET, or of a form's POST."""
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    if body is not None:
        headers = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("set-cookie", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, "", error.read().decode()


def test_two_dashboards_given_one_secret_take_each_others_confirmations(
    database_url: str,
    busy_hub: str,
    sql: psycopg.Connection[Any],
    tmp_path: Path,
) -> None:
    """Replicas behind a load balancer: the question from one, the
    confirmation to the other (the secret from a file, and from the
    environment)."""
    secret = tmp_path / "secret"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    fields = {"dead_letter_id": the_dead_letter(sql, busy_hub)}
    with (
        dashboard(database_url, busy_hub, "--allow-actions", "--secret-file", str(secret)) as one,
        dashboard(
            database_url, busy_hub, "--allow-actions", env={"TASKHUB_DASHBOARD_SECRET": SECRET}
        ) as two,
    ):
        status, cookie, page = exchange(one.base + "/dead-letters", {})
        assert status == 200 and cookie.startswith(CSRF_COOKIE + "=")
        jar = {"Cookie": cookie.partition(";")[0]}
        status, _, asked = exchange(
            one.base + "/actions/requeue", jar, {**fields, "csrf_token": token_of(page)}
        )
        assert status == 200 and 'id="question"' in asked, asked
        answered = {**fields, "csrf_token": token_of(asked), "confirmation": confirmation_of(asked)}
        status, _, done = exchange(two.base + "/actions/requeue", jar, answered)
        assert status == 200 and "is back on its queue" in done, done
    assert dead_letters(sql, busy_hub) == 0
    assert "can be read by other users" not in one.stderr
