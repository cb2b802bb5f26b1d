"""The Alembic migrations: contract-exact schema, clean downgrade, offline
script, concurrent deploys, and refusal of bad schema names."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from devkit.schema.catalogue import snapshot
from provider.deploy import migrate
from provider.schema_name import InvalidSchemaName
from provider.testing.embedded_pg import client_tool
from tests.support.alembic_cli import alembic
from tests.support.contract import CONTRACT_FUNCTIONS, CONTRACT_TABLES, turn_as_json
from tests.support.db import new_schema_name
from tests.support.owned_hubs import take_back_create_on_public
from tests.support.paths import REPO


def columns(conn: psycopg.Connection[Any], schema: str) -> set[tuple[object, ...]]:
    rows = conn.execute(
        "SELECT table_name, column_name, ordinal_position, data_type, is_nullable,"
        " replace(coalesce(column_default, ''), %s, 'S.')"
        " FROM information_schema.columns WHERE table_schema = %s AND table_name = ANY(%s)",
        [f"{schema}.", schema, CONTRACT_TABLES],
    ).fetchall()
    return set(rows)


def primary_keys(conn: psycopg.Connection[Any], schema: str) -> set[tuple[object, ...]]:
    rows = conn.execute(
        "SELECT tc.table_name, string_agg(kcu.column_name, ',' ORDER BY kcu.ordinal_position)"
        " FROM information_schema.table_constraints tc"
        " JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)"
        " WHERE tc.table_schema = %s AND tc.constraint_type = 'PRIMARY KEY'"
        " AND tc.table_name = ANY(%s)"
        " GROUP BY tc.table_name",
        [schema, CONTRACT_TABLES],
    ).fetchall()
    return set(rows)


def signatures(conn: psycopg.Connection[Any], schema: str) -> dict[str, tuple[str, str]]:
    rows = conn.execute(
        "SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid)"
        " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = %s AND p.proname = ANY(%s)",
        [schema, CONTRACT_FUNCTIONS],
    ).fetchall()
    return {str(name): (str(args), str(result)) for name, args, result in rows}


def objects_in(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s"
        " UNION ALL SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = %s",
        [schema, schema],
    ).fetchall()
    return sorted(str(row[0]) for row in rows)


def schema_exists(conn: psycopg.Connection[Any], schema: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", [schema]).fetchone()
        is not None
    )


def test_tables_match_the_duroxide_schema_column_for_column(
    hub_schema: str, duroxide_schema: str, sql: psycopg.Connection[Any]
) -> None:
    ours = columns(sql, hub_schema)
    theirs = columns(sql, duroxide_schema)
    assert len(ours) > 60
    # A new hub stores its history as json (revision 0029), and keeps for
    # flow control, in columns of its own (revision 0029, named taskhub_*,
    # nullable, no default: a change of the catalog alone on a live hub), the
    # worker queue's activity names and the queues' and leases' steering
    # (priority, labels and the orchestration's name); the rest is 0.2.2's.
    event_data = next(row for row in ours if row[:2] == ("history", "event_data"))
    assert event_data[3] == "json"
    ours_only = {row[:2] for row in ours if str(row[1]).startswith("taskhub_")}
    steering = {"taskhub_priority", "taskhub_labels", "taskhub_orchestration"}
    assert ours_only == {
        ("worker_queue", "taskhub_activity_name"),
        *(("worker_queue", name) for name in (*steering, "taskhub_rank")),
        *(("orchestrator_queue", name) for name in (*steering, "taskhub_rank")),
        *(("instance_locks", name) for name in steering),
    }
    assert all(
        row[4] == "YES" and row[5] == "" for row in ours if str(row[1]).startswith("taskhub_")
    )
    ours = {row for row in ours if not str(row[1]).startswith("taskhub_")}
    assert (ours - {event_data}) | {(*event_data[:3], "text", *event_data[4:])} == theirs
    assert primary_keys(sql, hub_schema) == primary_keys(sql, duroxide_schema)


def test_contract_functions_have_the_duroxide_signatures(
    hub_schema: str, duroxide_schema: str, sql: psycopg.Connection[Any]
) -> None:
    ours = signatures(sql, hub_schema)
    assert sorted(ours) == sorted(CONTRACT_FUNCTIONS)
    theirs = signatures(sql, duroxide_schema)
    # A new hub hands the turn over as json; everything else is 0.2.2's.
    args, result = theirs["fetch_orchestration_item"]
    assert ours["fetch_orchestration_item"] == (args, turn_as_json(result))
    assert {**ours, "fetch_orchestration_item": theirs["fetch_orchestration_item"]} == theirs


def test_ledger_leaves_the_duroxide_runtime_nothing_to_migrate(
    hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    import duroxide

    def fingerprint() -> list[tuple[object, ...]]:
        return sql.execute(
            "SELECT p.proname, md5(pg_get_functiondef(p.oid)) FROM pg_proc p"
            " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s ORDER BY 1",
            [hub_schema],
        ).fetchall()

    before = fingerprint()
    ledger_before = sql.execute(
        f'SELECT count(*) FROM "{hub_schema}"._duroxide_migrations'
    ).fetchone()
    duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema)
    assert fingerprint() == before
    assert (
        sql.execute(f'SELECT count(*) FROM "{hub_schema}"._duroxide_migrations').fetchone()
        == ledger_before
    )


def test_upgrade_twice_is_a_no_op(hub_schema: str, database_url: str) -> None:
    migrate.upgrade(database_url, hub_schema)


def test_downgrade_to_base_removes_the_schema_it_created(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("down")
    migrate.upgrade(database_url, schema)
    assert "fetch_orchestration_item" in objects_in(sql, schema)
    migrate.downgrade(database_url, schema)
    assert not schema_exists(sql, schema)


def test_downgrade_to_base_leaves_public_as_it_was(fresh_database: str) -> None:
    take_back_create_on_public(fresh_database)  # a superuser migrates it (PostgreSQL 14)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.app_owned (id int)")
        before = objects_in(conn, "public")
        migrate.upgrade(fresh_database, "public")
        assert "orchestrator_queue" in objects_in(conn, "public")
        migrate.downgrade(fresh_database, "public")
        assert objects_in(conn, "public") == before
        assert schema_exists(conn, "public")


def test_an_applications_own_alembic_version_is_untouched(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("app")
    sql.execute(f'CREATE SCHEMA "{schema}"')
    sql.execute(f'CREATE TABLE "{schema}".alembic_version (version_num varchar(32) PRIMARY KEY)')
    sql.execute(f"INSERT INTO \"{schema}\".alembic_version VALUES ('app_rev_42')")

    migrate.upgrade(database_url, schema)
    migrate.downgrade(database_url, schema)

    rows = sql.execute(f'SELECT version_num FROM "{schema}".alembic_version').fetchall()
    assert rows == [("app_rev_42",)]
    assert objects_in(sql, schema) == ["alembic_version", "alembic_version_pkey"]


def test_offline_script_applies_with_psql_to_an_empty_database(
    fresh_database: str, tmp_path: Path
) -> None:
    offline = alembic("-x", "schema=dba_hub", "upgrade", "head", "--sql", url="")
    assert offline.returncode == 0, offline.stderr
    script = tmp_path / "taskhub.sql"
    script.write_text(offline.stdout)
    assert "pg_advisory_xact_lock" in offline.stdout

    psql = client_tool("psql")
    applied = subprocess.run(
        [psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", fresh_database, "-f", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert applied.returncode == 0, applied.stderr

    current = alembic("-x", "schema=dba_hub", "current", url=fresh_database)
    assert "(head)" in current.stdout
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM dba_hub.fetch_orchestration_item(0, 1000)"
        ).fetchone()
        assert row == (0,)


def test_six_concurrent_upgrades_all_succeed(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("race")
    with ThreadPoolExecutor(max_workers=6) as pool:
        runs = list(
            pool.map(
                lambda _: alembic("-x", f"schema={schema}", "upgrade", "head", url=database_url),
                range(6),
            )
        )
    assert [run.returncode for run in runs] == [0] * 6, [run.stderr[-500:] for run in runs]
    versions = sql.execute(
        f'SELECT version_num FROM "{schema}".taskhub_pg_alembic_version'
    ).fetchall()
    heads = alembic("heads", url=database_url).stdout.split()[0]
    assert versions == [(heads,)]


HOSTILE_NAMES = [
    "Robert'); DROP SCHEMA public CASCADE;--",
    'quo"ted',
    "UpperCase",
    "9lives",
    "",
    "x" * 64,
    "pg_catalog",
    "with space",
    "ünïcödé",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_bad_schema_names_are_refused(name: str, database_url: str) -> None:
    with pytest.raises(InvalidSchemaName, match="invalid schema name"):
        migrate.upgrade(database_url, name)


def test_the_cli_refuses_a_bad_schema_name_and_creates_nothing(
    database_url: str, sql: psycopg.Connection[Any]
) -> None:
    schemas_before = sql.execute("SELECT count(*) FROM pg_namespace").fetchone()
    run = alembic("-x", "schema=evil; DROP TABLE x", "upgrade", "head", url=database_url)
    assert run.returncode != 0
    assert "invalid schema name" in run.stderr
    assert sql.execute("SELECT count(*) FROM pg_namespace").fetchone() == schemas_before


def revision_pairs() -> list[tuple[str, str]]:
    """(revision, the one before) for every revision after the first, from migrations/versions/."""
    numbers = sorted(path.name[:4] for path in (REPO / "migrations" / "versions").glob("0*.py"))
    return list(zip(numbers[1:], numbers, strict=False))


@pytest.mark.parametrize(("revision", "previous"), revision_pairs())
def test_downgrading_a_revision_gives_back_the_one_before(
    database_url: str, sql: psycopg.Connection[Any], revision: str, previous: str
) -> None:
    at_previous = new_schema_name("rp")
    migrate.upgrade(database_url, at_previous, previous)
    back = new_schema_name("rb")
    migrate.upgrade(database_url, back, revision)

    migrate.downgrade(database_url, back, previous)

    assert snapshot(sql, back) == snapshot(sql, at_previous)
