"""A password never reaches the output, whatever it holds (issue 36): one
with `/`, `+`, `=`, `@` and a space, written percent-encoded, raw, in a
keyword string and in the URL's query, right and wrong, against a server
that checks it (scram-sha-256), an unreachable one and an unknown host; run
through every verb of the CLI (text and --json), the provider (TaskHub,
AsyncTaskHub, HubCollector) and the metrics server. Neither the password nor
any encoding of it nor any piece of it appears in stdout, stderr, a log
record or an exception's text."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from devkit.waiting import wait_until
from provider import AsyncTaskHub, ConfigurationError, TaskHub
from provider.cli import main
from provider.deploy import migrate
from provider.logs import JsonLogFormatter
from provider.metrics import HubCollector
from provider.testing.embedded_pg import free_port
from tests.ops.test_healthz import get
from tests.support.password_cluster import PasswordCluster, password_cluster

PASSWORD = "Zq7v/Kd9w+Wx4y=Rt2z@Mn5u Pl8s"
WRONG = "Bd4k@" + PASSWORD  # holds the right one: what hides it hides this
ROLE, DATABASE, SCHEMA = "masker", "masked", "orders"
PIECES = re.split(r"[/+=@ ]", PASSWORD)  # Zq7v, Kd9w, ...: each distinctive
SECRETS = {
    PASSWORD,
    quote(PASSWORD, safe=""),
    quote(PASSWORD),
    quote_plus(PASSWORD),
    PASSWORD.replace(" ", "%20"),
    *PIECES,
}


def leaks(text: str) -> list[str]:
    return sorted(secret for secret in SECRETS if secret in text)


@pytest.fixture(scope="module")
def cluster() -> Iterator[PasswordCluster]:
    """The server that checks passwords, with a hub in `orders` made by the
    migrations logged in with the password (percent-encoded, as it must be)."""
    with password_cluster() as started:
        started.add_login(ROLE, PASSWORD, DATABASE)
        migrate.upgrade(scenarios(started.port)["right, encoded"], SCHEMA)
        yield started


def escaped(password: str) -> str:
    """An unquoted libpq keyword value: each space after a backslash."""
    return password.replace(" ", "\\ ")


def scenarios(port: int) -> dict[str, str]:
    here = f"127.0.0.1:{port}/{DATABASE}"
    encoded, wrong = quote(PASSWORD, safe=""), quote(WRONG, safe="")
    spaced = PASSWORD.replace(" ", "%20")  # "/", "+", "=" and "@" left raw
    keywords = f"host=127.0.0.1 port={port} dbname={DATABASE} user={ROLE}"
    return {
        "right, encoded": f"postgresql://{ROLE}:{encoded}@{here}",
        "wrong, encoded": f"postgresql://{ROLE}:{wrong}@{here}",
        "right, raw": f"postgresql://{ROLE}:{PASSWORD}@{here}",
        "wrong, raw": f"postgresql://{ROLE}:{WRONG}@{here}",
        "right, only its space encoded": f"postgresql://{ROLE}:{spaced}@{here}",
        "right, keywords": f"{keywords} password='{PASSWORD}'",
        "wrong, keywords": f"{keywords} password='{WRONG}'",
        # Unquoted, its space kept by a backslash (issue 54: only the part
        # before the space was masked).
        "right, keywords escaped": f"{keywords} password={escaped(PASSWORD)}",
        "wrong, keywords escaped": f"{keywords} password={escaped(WRONG)}",
        "right, in the query": f"postgresql://{here}?user={ROLE}&password={encoded}",
        "unreachable": f"postgresql://{ROLE}:{encoded}@127.0.0.1:{free_port()}/{DATABASE}",
        "unknown host": f"postgresql://{ROLE}:{encoded}@db.invalid:{port}/{DATABASE}",
    }


# Each verb, as an operator would type it (with the hub's schema).
VERBS = (
    ("status",),
    ("check",),
    ("inspect", "queues"),
    ("inspect", "leases"),
    ("inspect", "dead-letters"),
    ("inspect", "instances"),
    ("inspect", "instance", "order-1"),
    ("cancel", "order-1", "--yes"),
    ("raise-event", "order-1", "Paid", '"yes"'),
    ("requeue", "1"),
    ("release-lease", "order-1"),
    ("delete-instance", "order-1", "--yes"),
    ("prune", "--completed-before", "1d", "--yes"),
    ("turn-form",),
    ("upgrade",),
)
# What each verb ends with on the hub when the password is right: order-1
# and dead letter 1 are not there (exit 3), the rest works (exit 0).
NOT_THERE = ("inspect instance", "cancel", "raise-event", "requeue", "release-lease")
RIGHT_EXIT = {name: 3 for name in (*NOT_THERE, "delete-instance")}


@dataclass(frozen=True)
class Ran:
    argv: tuple[str, ...]
    code: int
    printed: str  # stdout and stderr


def run(capsys: pytest.CaptureFixture[str], *argv: str, url: str | None = None) -> Ran:
    """main() with --url `url`, or with no --url and DATABASE_URL unset."""
    capsys.readouterr()
    where = ("--url", url) if url is not None else ()
    code = main([*argv, *where])
    out, err = capsys.readouterr()
    return Ran(tuple(argv), code, out + err)


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every record at every level, with its fields and exception."""
    formatter = JsonLogFormatter()
    return "\n".join(formatter.format(record) for record in caplog.records)


def exception_text(error: BaseException) -> str:
    return f"{error}\n{error!r}\n" + "".join(traceback.format_exception(error))


@pytest.fixture(autouse=True)
def everything_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)


def verb_name(verb: tuple[str, ...]) -> str:
    return " ".join(verb[:2]) if verb[0] == "inspect" else verb[0]


def works(scenario: str) -> bool:
    """Is the scenario's URL one that logs in (right, and written so libpq reads it)?"""
    return scenario.startswith("right") and "raw" not in scenario and "only" not in scenario


@pytest.mark.parametrize("scenario", list(scenarios(1)))
def test_no_verb_prints_or_logs_the_password(
    cluster: PasswordCluster,
    scenario: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    url = scenarios(cluster.port)[scenario]
    texts = {verb_name(verb): run(capsys, *verb, "--schema", SCHEMA, url=url) for verb in VERBS}
    jsons = [run(capsys, *verb, "--schema", SCHEMA, "--json", url=url) for verb in VERBS]
    # The same URL from the environment; a schema with no hub; a bad name.
    monkeypatch.setenv("DATABASE_URL", url)
    others = [
        run(capsys, "inspect", "queues", "--schema", SCHEMA),
        run(capsys, "status", "--schema", "nosuch"),
        run(capsys, "inspect", "queues", "--schema", "Not-A-Schema"),
    ]
    for done in [*texts.values(), *jsons, *others]:
        assert "Traceback" not in done.printed, done
        assert leaks(done.printed) == [], done
    assert leaks(logged(caplog)) == []

    codes = {name: done.code for name, done in texts.items()}
    if works(scenario):  # the password as written logs in: each verb did its work
        assert codes == {verb_name(v): RIGHT_EXIT.get(verb_name(v), 0) for v in VERBS}, texts
    elif "raw" in scenario or "only" in scenario:
        # libpq would misread it: refused before anything connects, saying how to write it.
        assert set(codes.values()) == {2}, texts
        assert "percent-encode" in texts["status"].printed
    else:  # wrong, unreachable, unknown host
        assert set(codes.values()) == {4}, texts


def open_async(url: str) -> None:
    async def opened() -> None:
        hub = AsyncTaskHub.connect(url, SCHEMA, pool_min_size=1, connect_timeout_s=2)
        async with hub:
            await hub.find_instances(limit=1)

    asyncio.run(opened())


def open_blocking(url: str) -> None:
    with TaskHub.connect(url, SCHEMA, pool_min_size=1, connect_timeout_s=2) as hub:
        hub.find_instances(limit=1)


@pytest.mark.parametrize("scenario", list(scenarios(1)))
def test_the_provider_raises_and_logs_no_password(
    cluster: PasswordCluster, scenario: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = scenarios(cluster.port)[scenario]
    raised: list[BaseException] = []
    for opening in (open_blocking, open_async):
        try:
            opening(url)
        except ConfigurationError as error:
            raised.append(error)
    try:
        collector = HubCollector(url, [SCHEMA], timeout_s=2)
    except ConfigurationError as error:
        raised.append(error)
    else:
        list(collector.collect())
        (state,) = collector.health.states()
        assert state.up == works(scenario), state
        assert leaks(f"{state} {state.as_json()}") == []
    for refused in raised:
        assert leaks(exception_text(refused)) == [], exception_text(refused)
    assert leaks(logged(caplog)) == []
    # A URL that logs in opens all three; one libpq would misread, none (the
    # collector refuses it as it is made); a wrong or unreachable one opens
    # no hub, and the collector reads it as down.
    expected = 0 if works(scenario) else 3 if "raw" in scenario or "only" in scenario else 2
    assert len(raised) == expected, raised


METRICS_SCENARIOS = ("wrong, encoded", "right, raw", "wrong, keywords")


@pytest.mark.parametrize("scenario", METRICS_SCENARIOS)
def test_the_metrics_server_prints_and_serves_no_password(
    cluster: PasswordCluster, scenario: str
) -> None:
    url = scenarios(cluster.port)[scenario]
    base = f"http://127.0.0.1:{free_port()}"
    server = subprocess.Popen(
        [sys.executable, "-m", "provider", "metrics", "--url", url, "--schema", SCHEMA,
         "--port", base.rsplit(":", 1)[1], "--timeout", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={key: value for key, value in os.environ.items() if key != "DATABASE_URL"},
    )  # fmt: skip
    try:
        if "raw" not in scenario:
            status, body = wait_until(
                lambda: answered(base + "/healthz"), timeout_s=30, message="/healthz to answer"
            )
            assert status == 503 and leaks(body) == []
            assert leaks(get(base + "/metrics")[1]) == []
    finally:
        if server.poll() is None and "raw" not in scenario:  # a raw one exits by itself
            server.terminate()
        out, err = server.communicate(timeout=30)
    assert "Traceback" not in err
    assert leaks(out + err) == [], out + err
    if "raw" in scenario:
        assert server.returncode == 2 and "percent-encode" in err
    else:
        assert "password authentication failed" in err  # the reason: in the log only


def answered(url: str) -> tuple[int, str] | None:
    try:
        return get(url)
    except OSError:  # not listening yet
        return None


# -- the ways docs/ops.md gives the password: none of them on the command line --


def pgpass_line(port: int) -> str:
    escaped = PASSWORD.replace("\\", "\\\\").replace(":", "\\:")  # pgpass's two escapes
    return f"127.0.0.1:{port}:{DATABASE}:{ROLE}:{escaped}\n"


def test_a_service_file_and_a_pgpass_file_need_no_url(
    cluster: PasswordCluster,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    passwords = tmp_path / "pgpass"
    passwords.write_text(pgpass_line(cluster.port))
    passwords.chmod(0o600)  # libpq ignores a pgpass file others may read
    services = tmp_path / "pg_service.conf"
    services.write_text(
        f"[taskhub]\nhost=127.0.0.1\nport={cluster.port}\ndbname={DATABASE}\nuser={ROLE}\n"
    )
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("PGPASSFILE", str(passwords))
    # A URL without its password: the pgpass file has it, and no warning.
    no_password = f"postgresql://{ROLE}@127.0.0.1:{cluster.port}/{DATABASE}"
    done = run(capsys, "status", "--schema", SCHEMA, url=no_password)
    assert done.code == 0 and "warning" not in done.printed, done
    # No URL at all: PGSERVICE names the service, as for psql; the migrations too.
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    monkeypatch.setenv("PGSERVICE", "taskhub")
    for verb in (("status",), ("inspect", "queues"), ("upgrade",)):
        done = run(capsys, *verb, "--schema", SCHEMA)
        assert done.code == 0 and "warning" not in done.printed, done
        assert leaks(done.printed) == []
