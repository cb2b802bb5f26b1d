"""cleanup_schema() (the runtime's teardown) leaves nothing of the hub behind,
and the schema can be migrated again afterwards."""

from __future__ import annotations

from typing import Any

import psycopg

from devkit.roles import LoginRole
from provider.deploy import migrate
from tests.support.db import new_schema_name


def objects_in(conn: psycopg.Connection[Any], schema: str) -> list[str]:
    rows = conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace"
        " UNION ALL SELECT proname FROM pg_proc WHERE pronamespace = %s::regnamespace",
        [schema, schema],
    ).fetchall()
    return sorted(str(row[0]) for row in rows)


def test_cleanup_schema_removes_every_table_and_function(
    database_url: str, sql: psycopg.Connection[Any], runtime_login: LoginRole
) -> None:
    schema = new_schema_name("clean")
    migrate.upgrade(database_url, schema, runtime_role=runtime_login.name)
    guard = sql.execute(f'SELECT "{schema}".taskhub_runtime_ddl_guard_name()').fetchone()
    sql.execute(f'CREATE TABLE "{schema}".application_table (id int)')
    # An application's function of a contract-like name stays too.
    sql.execute(
        f'CREATE FUNCTION "{schema}".fetch_orders() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$'
    )

    sql.execute(f'SELECT "{schema}".cleanup_schema()')

    assert objects_in(sql, schema) == ["application_table", "fetch_orders"]
    # The runtime role's grants and the schema's DDL guard went with it.
    assert sql.execute(
        "SELECT has_schema_privilege(%s, %s, 'USAGE'),"
        " (SELECT count(*) FROM pg_event_trigger WHERE evtname = %s)",
        [runtime_login.name, schema, guard[0] if guard else None],
    ).fetchone() == (False, 0)
    migrate.upgrade(database_url, schema)
    assert "fetch_orchestration_item" in objects_in(sql, schema)
