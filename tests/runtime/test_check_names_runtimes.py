"""`taskhub-pg check` names the duroxide releases a hub's ledger admits
(provider/operations/runtime_ledger.py): information beside the report,
never drift, so the exit code is what the drift alone makes it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from devkit import released_runtimes
from devkit.roles import LoginRole, login_role
from provider.cli import main
from provider.deploy import migrate
from provider.operations.runtime_ledger import RELEASES, judge
from tests.support import drift
from tests.support.db import new_schema_name

HEAD_LEDGER = [*range(1, 22), 23, 25]
KNOWN = {release.version: release for release in RELEASES}


@pytest.mark.parametrize(
    ("ledger", "serves", "refuses", "would_migrate"),
    [
        # A hub: 0.2.2's versions, the newest.
        (HEAD_LEDGER, ["0.2.1", "0.2.2"], {"0.2.0": [25]}, {}),
        # A ledger without 25: 0.2.0's; the newer releases would put their
        # fetch of migration 25 over ours.
        (HEAD_LEDGER[:-1], ["0.2.0"], {}, {"0.2.1": [25], "0.2.2": [25]}),
        # A version no release knows: each refuses.
        ([*HEAD_LEDGER, 26], [], {"0.2.0": [25, 26], "0.2.1": [26], "0.2.2": [26]}, {}),
        # No ledger: each would create it and apply all it knows.
        ([], [], {}, {v: sorted(r.migrations) for v, r in KNOWN.items()}),
    ],
)
def test_a_release_serves_a_ledger_that_holds_exactly_its_versions(
    ledger: list[int],
    serves: list[str],
    refuses: dict[str, list[int]],
    would_migrate: dict[str, list[int]],
) -> None:
    admission = judge(ledger)
    assert admission.serves == serves
    assert admission.refuses == refuses
    assert admission.would_migrate == would_migrate


def test_a_login_without_create_on_the_database_is_named_for_the_releases_that_need_it() -> None:
    admission = judge(HEAD_LEDGER, ["app_runtime"])
    assert admission.refuses_logins == {"0.2.1": ["app_runtime"]}
    assert "0.2.1 refuses to start as app_runtime" in admission.line()


@pytest.mark.slow  # 0.2.1's virtualenv: a download on a machine's first run
def test_the_hubs_ledger_is_the_newest_release_and_each_release_writes_what_is_known_of_it(
    database_url: str, hub_schema: str, duroxide_schema: str
) -> None:
    assert _ledger(database_url, hub_schema) == HEAD_LEDGER
    assert _ledger(database_url, duroxide_schema) == sorted(KNOWN["0.2.2"].migrations)
    # 0.2.1, from its own virtualenv, on an empty schema.
    schema = new_schema_name("dx021")
    subprocess.run(
        [
            str(released_runtimes.python_of("0.2.1")),
            "-E",
            "-s",
            "-c",
            "import sys, duroxide; duroxide.PostgresProvider.connect_with_schema(*sys.argv[1:])",
            database_url,
            schema,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert _ledger(database_url, schema) == sorted(KNOWN["0.2.1"].migrations)


@pytest.fixture
def owned_hub(database_url: str) -> Iterator[tuple[str, LoginRole]]:
    """A hub its own owner (no superuser, CREATE on the database) migrated,
    with a runtime role that has no DDL (no CREATE on the database)."""
    with login_role(database_url, prefix="owner") as owner, login_role(database_url) as runtime:
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(
                    sql.Identifier(_database(admin)), sql.Identifier(owner.name)
                )
            )
        schema = new_schema_name("rl")
        migrate.upgrade(owner.url, schema, runtime_role=runtime.name, runtime_ddl="none")
        try:
            yield schema, owner
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_check_prints_the_releases_as_information_and_exits_as_the_drift_says(
    capsys: pytest.CaptureFixture[str], database_url: str, owned_hub: tuple[str, LoginRole]
) -> None:
    schema, owner = owned_hub
    code, out, err = _check(capsys, owner.url, schema)
    assert code == 0 and "no drift" in out
    (line,) = [line for line in out.splitlines() if line.startswith("runtimes: ")]
    assert line.startswith(
        "runtimes: duroxide 0.2.1 and 0.2.2 serve this hub (_duroxide_migrations holds"
        " 1-21, 23, 25); 0.2.0 refuses it at startup (it does not know 25); 0.2.1 refuses"
        " to start as runtime_"
    ), line
    assert "runtimes" not in err

    # An operator reads the same; a superuser's session reads the catalogue
    # alone, and no ledger.
    with login_role(database_url, prefix="operator") as operator:
        with psycopg.connect(owner.url, autocommit=True) as conn:
            grant = sql.SQL("SELECT {}.taskhub_grant_operator_role(%s)")
            conn.execute(grant.format(sql.Identifier(schema)), [operator.name])
        code, out, _ = _check(capsys, operator.url, schema)
        assert code == 0 and "runtimes: duroxide 0.2.1 and 0.2.2 serve this hub" in out
    code, out, err = _check(capsys, database_url, schema)
    assert code == 0 and "runtimes:" not in out and "read the catalogue alone" in err
    privileged = drift.check(database_url, schema)
    assert privileged.catalogue_only and privileged.as_json()["runtimes"] is None

    # A version no release knows is not drift: the exit code stays 0.
    with psycopg.connect(owner.url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("INSERT INTO {}._duroxide_migrations (version, name) VALUES (26, 'x')").format(
                sql.Identifier(schema)
            )
        )
    code, out, _ = _check(capsys, owner.url, schema, "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"]
    assert report["runtimes"]["serves"] == [] and report["runtimes"]["refuses"]["0.2.2"] == [26]


def _check(
    capsys: pytest.CaptureFixture[str], url: str, schema: str, *more: str
) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["check", "--url", url, "--schema", schema, *more])
    said = capsys.readouterr()
    return code, said.out, said.err


def _ledger(url: str, schema: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            sql.SQL("SELECT version FROM {}._duroxide_migrations ORDER BY 1").format(
                sql.Identifier(schema)
            )
        ).fetchall()
    return [int(version) for (version,) in rows]


def _database(conn: psycopg.Connection[tuple[object, ...]]) -> str:
    row = conn.execute("SELECT current_database()").fetchone()
    assert row is not None
    return str(row[0])
