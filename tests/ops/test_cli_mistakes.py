"""The mistakes a user makes with `taskhub-pg` (issue 22): each ends with its
documented exit code and one line on stderr (one JSON object under --json),
never a traceback. In process through main(), and as a user meets them:
`python -m provider` in a terminal-less subprocess."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from devkit.roles import login_role
from provider.cli import main
from provider.cli.deploy_commands import Citus, RuntimeDdl
from provider.cli.failures import failure_of
from provider.deploy import migrate
from provider.deploy.migration_options import CITUS_MODES
from provider.deploy.refusals import MigrationMisused, SessionNotPinned
from provider.deploy.runtime_role import RUNTIME_DDL_MODES
from provider.errors import ConfigurationError, PermanentError, RetryableError
from tests.support.db import new_schema_name
from tests.support.flavours import DUROXIDE_0_2_2
from tests.support.paths import REPO
from tests.unit.cli_runs import error_lines

UNREACHABLE_URL = "postgresql://x@127.0.0.1:1/x"
BAD_URLS = ("not a url", "http://example.com/x", "postgresql://host:notaport/db")


@pytest.fixture(scope="module")
def hubs_url(server_url: str) -> Iterator[str]:
    """A database of its own holding hubs orders and billing, a duroxide 0.2.2
    schema not adopted (legacy), an empty schema, and an empty public."""
    name = f"mistakes_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))
    migrate.upgrade(url, "orders")
    migrate.upgrade(url, "billing")
    DUROXIDE_0_2_2.create_schema(url, "legacy")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA empty")
    yield url
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def only_line(err: str) -> str:
    assert "Traceback" not in err
    lines = error_lines(err)  # after the warning of a password in --url
    assert len(lines) == 1, err
    assert lines[0].startswith("taskhub-pg: "), err
    return lines[0]


def only_json(out: str, err: str) -> dict[str, Any]:
    assert out == "" and "Traceback" not in err
    lines = error_lines(err)
    assert len(lines) == 1, err
    record: dict[str, Any] = json.loads(lines[0])
    assert set(record) == {"error", "exit_code", "hint"}
    return record


@dataclass(frozen=True)
class Mistake:
    argv: tuple[str, ...]  # {url}: the hubs' database
    code: int
    words: tuple[str, ...]  # each in the line (or in the JSON's error and hint)


NO_HUB = ("schema public holds no task hub", "billing, orders (pass --schema)", "legacy")
FORGOT_SCHEMA = [
    Mistake((*verb, "--url", "{url}"), 3, NO_HUB)
    for verb in (
        ("inspect", "queues"),
        ("inspect", "leases"),
        ("inspect", "poison"),
        ("inspect", "dead-letters"),
        ("inspect", "stuck"),
        ("inspect", "instance", "x"),
        ("requeue", "1"),
        ("release-lease", "x"),
        ("prune", "--completed-before", "1d", "--yes"),
        ("delete-instance", "x", "--yes"),
        ("downgrade", "--revision", "base", "--yes"),
    )
]
ON = ("--url", "{url}", "--schema")
MISTAKES = [
    *FORGOT_SCHEMA,
    Mistake(("inspect", "queues", *ON, "legacy"), 3, ("adopt it with taskhub-pg upgrade",)),
    Mistake(("inspect", "queues", *ON, "nosuch"), 3, ("schema nosuch does not exist", "orders")),
    Mistake(("status", *ON, "nosuch"), 3, ("schema nosuch does not exist", "orders")),
    *(
        Mistake((*verb, "--url", bad, "--schema", "orders"), 2, ("--url", bad))
        for bad in BAD_URLS
        for verb in (
            ("upgrade",),
            ("downgrade", "--revision", "base", "--yes"),
            ("status",),
            ("check",),
            ("inspect", "queues"),
            ("metrics",),
        )
    ),
    Mistake(("status", "--url", "postgresql://u:s3cret@h:x/db"), 2, ("--url", "//***@h")),
    Mistake(("upgrade", "--revision", "9999", *ON, "orders"), 2, ("Can't locate revision",)),
    Mistake(
        ("downgrade", "--revision", "9999", "--yes", *ON, "orders"),
        2,
        ("Can't locate revision",),
    ),
    *(
        Mistake((*verb, "--url", UNREACHABLE_URL), 4, ("database unreachable", "port 1"))
        for verb in (
            ("upgrade",),
            ("downgrade", "--revision", "base", "--yes"),
            ("status",),
            ("check",),
            ("inspect", "queues"),
        )
    ),
    Mistake(("inspect", "queues"), 2, ("--url is required",)),
    Mistake(("status", "--url", "{url}", "--schema", "pg_x"), 2, ("--schema", "pg_ prefix")),
    Mistake(("prune", "--completed-before", "soon", *ON, "orders"), 2, ("'soon'", "ISO 8601")),
]


def _argv(mistake: Mistake, url: str) -> list[str]:
    return [arg.replace("{url}", url) for arg in mistake.argv]


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: " ".join(m.argv))
def test_each_mistake_is_one_line_with_its_exit_code(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hubs_url: str,
    mistake: Mistake,
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    code, _, err = run(capsys, *_argv(mistake, hubs_url))
    line = only_line(err)
    assert code == mistake.code, line
    assert all(word in line for word in mistake.words), line
    assert "s3cret" not in line


# Every verb but metrics (a server, no --json) takes --json.
JSON_MISTAKES = [mistake for mistake in MISTAKES if mistake.argv[0] != "metrics"]


@pytest.mark.parametrize("mistake", JSON_MISTAKES, ids=lambda m: " ".join(m.argv))
def test_under_json_each_mistake_is_one_json_object_on_stderr(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    hubs_url: str,
    mistake: Mistake,
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    code, out, err = run(capsys, *_argv(mistake, hubs_url), "--json")
    record = only_json(out, err)
    assert code == mistake.code == record["exit_code"]
    said = f"{record['error']}; {record['hint']}"
    assert all(word in said for word in mistake.words), said


def test_a_forgotten_schema_reaches_the_terminal_as_one_line(hubs_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "provider", "inspect", "queues", "--url", hubs_url],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done
    assert done.stdout == ""
    assert "holds no task hub" in only_line(done.stderr)


def test_a_role_without_privileges_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], database_url: str, hub_schema: str
) -> None:
    with login_role(database_url, prefix="usage") as role:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f'GRANT USAGE ON SCHEMA "{hub_schema}" TO {role.name}')
        for verb in (("check",), ("prune", "--completed-before", "1d", "--yes")):
            code, _, err = run(capsys, *verb, "--url", role.url, "--schema", hub_schema)
            line = only_line(err)
            assert code == 1, line
            assert "refused, nothing changed: permission denied for" in line


def test_a_hub_missing_a_view_is_explained_after_the_fact(
    capsys: pytest.CaptureFixture[str], database_url: str, hub_schema: str
) -> None:
    """The fallback: an undefined table met past the up-front check."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'DROP VIEW "{hub_schema}".taskhub_current_leases CASCADE')
    code, _, err = run(capsys, "inspect", "leases", "--url", database_url, "--schema", hub_schema)
    line = only_line(err)
    assert code == 3 and f"schema {hub_schema} lacks part of its hub" in line, line
    assert "taskhub_current_leases" in line


def test_check_and_status_on_a_schema_without_a_hub_say_where_the_hubs_are(
    capsys: pytest.CaptureFixture[str], hubs_url: str
) -> None:
    # The drift check's answer stays its report (exit 1, not_migrated).
    code, out, err = run(capsys, "check", "--url", hubs_url)
    assert code == 1 and "not_migrated" in out
    assert "billing, orders (pass --schema)" in only_line(err)
    # An existing schema without a hub is "not migrated", with a note.
    code, out, err = run(capsys, "status", "--url", hubs_url, "--schema", "empty")
    assert code == 0 and err == ""
    assert "current:  not migrated" in out and "note:     schema empty holds no task hub" in out


def test_status_as_json(capsys: pytest.CaptureFixture[str], hubs_url: str) -> None:
    code, out, err = run(capsys, "status", "--url", hubs_url, "--schema", "orders", "--json")
    assert code == 0 and err == ""
    status = json.loads(out)
    assert status["schema"] == "orders" and status["current"] == migrate.head_revision()
    assert status["head"] == migrate.head_revision() and status["pending"] is False
    assert sorted(q["queue"] for q in status["queues"]) == ["orchestrator", "worker"]
    assert status["runtime_roles"] == [] and status["note"] is None
    assert status["shielded_failures"] == {"policy": "retry", "last_day": 0, "total": 0}


def test_the_metrics_verb_without_its_extra_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, hubs_url: str
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    for name in [name for name in sys.modules if name.startswith("provider.metrics.")]:
        monkeypatch.delitem(sys.modules, name)
    code, _, err = run(capsys, "metrics", "--url", hubs_url, "--schema", "orders")
    assert code == 2
    assert "needs the metrics extra: pip install 'taskhub-pg[metrics]'" in only_line(err)


def test_metrics_on_a_port_in_use_is_one_line(
    capsys: pytest.CaptureFixture[str], hubs_url: str
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        code, _, err = run(capsys, "metrics", "--port", port, "--host", "127.0.0.1",
                           "--url", hubs_url, "--schema", "orders")  # fmt: skip
    assert code == 1 and f"cannot listen on 127.0.0.1:{port}" in only_line(err)


def test_choices_are_listed_and_a_wrong_one_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], hubs_url: str
) -> None:
    assert [mode.value for mode in RuntimeDdl] == list(RUNTIME_DDL_MODES)
    assert tuple(mode.value for mode in Citus) == CITUS_MODES
    for wrong in (("--runtime-ddl", "bogus"), ("--citus", "bogus")):
        code, _, err = run(capsys, "upgrade", *wrong, *ON, "orders")
        assert code == 2 and "Traceback" not in err and "bogus" in err
    code, out, _ = run(capsys, "upgrade", "--help")
    assert code == 0 and "guarded|none" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.startswith("taskhub-pg ") and len(out.splitlines()) == 1


@pytest.mark.parametrize(
    ("error", "code", "words"),
    [
        (RetryableError("fetch", "server closed the connection"), 4, "database unreachable"),
        (ConfigurationError("connect", "cannot connect to 'postgresql://x@h/x'"), 4, "cannot"),
        (RetryableError("ack", "deadlock detected", "40P01"), 1, "try again"),
        (PermanentError("ack", "bad input", "22023"), 1, "refused, nothing changed: bad input"),
        (MigrationMisused("Can't locate revision identified by '9999'"), 2, "nothing changed"),
        (SessionNotPinned("a transaction pooler: connect directly"), 1, "connect directly"),
        (OSError(98, "Address already in use"), 1, "Address already in use"),
        (psycopg.OperationalError("connection failed: refused\n\tIs it up?"), 4, "Is it up?"),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else str(value),
)
def test_every_error_a_verb_leaves_has_an_exit_code(
    error: BaseException, code: int, words: str
) -> None:
    failure = failure_of(error)
    assert failure is not None and failure.code == code
    assert words in f"{failure.message}; {failure.hint}"


def test_psycopgs_own_warnings_are_not_a_second_line() -> None:
    """psycopg logs a cancel the server refused through logging's last
    resort; after main() they reach no stream (a fresh interpreter: pytest's
    own handlers would hide the last resort)."""
    program = (
        "import logging\n"
        "from provider.cli import main\n"
        "main(['--version'])\n"
        "logging.getLogger('psycopg').warning('query cancellation failed: refused')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stderr == ""


def test_a_text_system_exit_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """migrations/env.py ends a run it refuses with SystemExit("taskhub-pg: ...")."""

    def refuse(*_: object, **__: object) -> None:
        raise SystemExit("taskhub-pg: citus=x: the one mode is citus=schema")

    monkeypatch.setattr(migrate, "run", refuse)
    code, _, err = run(capsys, "upgrade", "--url", UNREACHABLE_URL)
    assert code == 1 and only_line(err) == "taskhub-pg: citus=x: the one mode is citus=schema"


def test_lock_waits_and_the_verdict_are_json_under_json(
    capsys: pytest.CaptureFixture[str], database_url: str
) -> None:
    schema = new_schema_name("cli")
    migrate.upgrade(database_url, schema, "0005")
    with psycopg.connect(database_url) as holder:
        holder.execute(f'SELECT count(*) FROM "{schema}".history')
        target = ("--url", database_url, "--schema", schema)
        locks = ("--lock-timeout-ms", "50", "--lock-attempts", "2")
        code, out, err = run(capsys, "upgrade", *target, *locks, "--json")
        holder.rollback()
    assert code == 1 and out == "" and "Traceback" not in err
    *waits, verdict = [json.loads(line) for line in err.splitlines()]
    assert len(waits) == 2 and all("table history" in wait["warning"] for wait in waits)
    assert verdict["exit_code"] == 1 and "nothing changed" in verdict["error"]
