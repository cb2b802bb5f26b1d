"""`taskhub-pg upgrade` and `downgrade` as a pipeline runs them: they say what
they applied, with lock waits and retries (--json too), fail in one line, and
downgrade asks before it removes anything."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from provider.cli import main
from provider.deploy import migrate
from provider.testing.embedded_pg import free_port
from tests.support.alembic_cli import alembic
from tests.support.db import new_schema_name
from tests.support.paths import REPO


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The installed command, stdin closed: no terminal to ask on."""
    return subprocess.run(
        [sys.executable, "-m", "provider", *argv],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def schema_exists(url: str, schema: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT to_regnamespace(%s) IS NOT NULL", [f'"{schema}"']).fetchone()
    return bool(row and row[0])


def test_downgrade_to_base_without_yes_and_without_a_terminal_exits_5(database_url: str) -> None:
    schema = new_schema_name("cli")
    migrate.upgrade(database_url, schema)
    done = run_cli("downgrade", "--revision", "base", "--url", database_url, "--schema", schema)
    assert done.returncode == 5, done
    assert "Not confirmed" in done.stderr and "removes the task hub" in done.stderr
    assert schema_exists(database_url, schema)
    done = run_cli("downgrade", "--revision", "0013", "--url", database_url, "--schema", schema)
    assert done.returncode == 5, done
    with psycopg.connect(database_url) as conn:
        row = conn.execute(f'SELECT version_num FROM "{schema}".taskhub_pg_alembic_version')
        assert row.fetchone() == (migrate.head_revision(),)


def test_upgrade_and_downgrade_say_what_they_did(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = new_schema_name("cli")
    target = ["--url", database_url, "--schema", schema]
    assert main(["upgrade", "--revision", "0005", *target]) == 0
    out = capsys.readouterr().out
    # Counted, not listed; "1 attempt" (issue 58: the list ran to 28, "1 attempts").
    assert f"schema {schema}: base -> 0005 (5 revisions) in " in out
    assert ", 1 attempt, 0 lock waits" in out
    assert main(["upgrade", *target, "--json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert report["from_revision"] == "0005" and report["to_revision"] == migrate.head_revision()
    assert report["steps"][0] == "0005 -> 0006" and report["attempts"] == 1
    assert report["retries"] == 0 and report["lock_waits"] == []
    assert report["locked_tables"] == [
        "orchestrator_queue",
        "instance_locks",
        "instances",
        "history",
        "worker_queue",
        "taskhub_settings",
        "taskhub_operator_privileges",
        "taskhub_schedules",
    ]
    assert report["duration_s"] > 0 and report["locks_held_ms"] > 0
    head, back = (f"{int(migrate.head_revision()) - n:04d}" for n in (0, 2))
    assert main(["downgrade", "--revision", back, "--yes", *target]) == 0
    assert f"{head} -> {back} (2 revisions) in " in capsys.readouterr().out
    assert main(["upgrade", *target]) == 0
    assert main(["upgrade", *target]) == 0
    assert "nothing to apply" in capsys.readouterr().out


def test_an_unknown_revision_is_one_line_and_exit_2(database_url: str) -> None:
    schema = new_schema_name("cli")
    migrate.upgrade(database_url, schema)
    target = ["--url", database_url, "--schema", schema]
    done = run_cli("downgrade", "--revision", "9999", "--yes", *target)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert "nothing changed: Can't locate revision identified by '9999'" in done.stderr
    done = run_cli("upgrade", "--revision", "9999", *target)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done


def test_a_held_table_fails_upgrade_in_one_line_with_exit_1(database_url: str) -> None:
    schema = new_schema_name("cli")
    migrate.upgrade(database_url, schema, "0005")
    with psycopg.connect(database_url, application_name="stuck-app") as holder:
        holder.execute(f'SELECT count(*) FROM "{schema}".history')
        done = run_cli(
            "upgrade",
            "--url",
            database_url,
            "--schema",
            schema,
            "--lock-timeout-ms",
            "50",
            "--lock-attempts",
            "2",
        )
        holder.rollback()
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    # One line per wait as it happens, then the verdict.
    assert len(lines) == 3 and all("table history" in line for line in lines), lines
    assert "attempt 1:" in lines[0] and "retrying in" in lines[0]
    assert "nothing changed" in lines[2] and "stuck-app" in lines[2]


def multi_host(url: str) -> str:
    """`url`'s server as the second of two hosts of a libpq multi-host URL,
    behind one nobody listens on, as a URL for a primary and its standby
    (hosts as percent-encoded socket folders: the test servers listen there)."""
    params = conninfo_to_dict(url)
    folder, port = str(params["host"]), params.get("port", "5432")
    nobody = tempfile.mkdtemp(prefix="taskhub-no-server-")
    hosts = ",".join(f"{quote(host, safe='')}:{port}" for host in (nobody, folder))
    return (
        f"postgresql://{params['user']}@{hosts}/{params['dbname']}"
        "?target_session_attrs=read-write&connect_timeout=2"
    )


def test_upgrade_on_a_multi_host_url_reaches_the_writable_host(database_url: str) -> None:
    """libpq takes the URL whole (SQLAlchemy's URL parser cannot read host:port
    lists): the first host does not answer, the second is the primary."""
    schema = new_schema_name("cli")
    url = multi_host(database_url)
    done = run_cli("upgrade", "--url", url, "--schema", schema)
    assert done.returncode == 0, done.stderr
    assert f"schema {schema}: base -> " in done.stdout
    assert schema_exists(database_url, schema)
    for argv in (["status"], ["check"], ["inspect", "queues"]):
        done = run_cli(*argv, "--url", url, "--schema", schema)
        assert done.returncode == 0, (argv, done.stderr)
    # alembic itself, online and as a script (which connects nowhere).
    other = new_schema_name("cli")
    assert alembic("-x", f"schema={other}", "upgrade", "head", url=url).returncode == 0
    script = alembic("-x", f"schema={other}", "upgrade", "head", "--sql", url=url)
    assert script.returncode == 0 and "COMMIT;" in script.stdout, script.stderr


def test_a_multi_host_url_that_reaches_no_host_fails_in_one_line(database_url: str) -> None:
    schema = new_schema_name("cli")
    dead = (
        f"postgresql://postgres@127.0.0.1:{free_port()},127.0.0.1:{free_port()}/x?connect_timeout=2"
    )
    for argv in (["upgrade"], ["status"]):
        done = run_cli(*argv, "--url", dead, "--schema", schema)
        assert done.returncode != 0
        assert "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
