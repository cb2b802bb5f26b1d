"""Shared databases (issue 36): whoever may CONNECT to a hub's database can
hold its advisory keys and notify its wakeup channel, and a hub in `public`
shares its schema with the application. `taskhub-pg check` says so in one
warning line each, and still exits 0: it is where the hub stands, not drift.
"""

from __future__ import annotations

import json

import psycopg
import pytest

from provider.cli import main
from provider.deploy import migrate

pytestmark = pytest.mark.slow


def check(capsys: pytest.CaptureFixture[str], url: str, schema: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["check", "--url", url, "--schema", schema])
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning")]
    return code, warnings


def test_check_warns_while_public_may_connect_and_not_after_it_was_revoked(
    fresh_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    migrate.upgrade(fresh_database, "orders")
    code, warnings = check(capsys, fresh_database, "orders")
    assert code == 0
    assert len(warnings) == 1 and "PUBLIC may CONNECT" in warnings[0]
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute(
            "DO $$ BEGIN EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC',"
            " current_database()); END $$"
        )
    assert check(capsys, fresh_database, "orders") == (0, [])


def test_check_warns_about_a_hub_in_public_beside_the_applications_tables(
    fresh_database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute(
            "DO $$ BEGIN EXECUTE format('REVOKE CONNECT ON DATABASE %I FROM PUBLIC',"
            " current_database()); END $$"
        )
    migrate.upgrade(fresh_database, "public")
    assert check(capsys, fresh_database, "public") == (0, [])
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.customers (id bigint PRIMARY KEY)")
    code, warnings = check(capsys, fresh_database, "public")
    assert code == 0
    assert warnings == [
        "warning: the hub lives in schema public beside 1 other table(s) or view(s): give it"
        " a schema of its own (--schema)"
    ]
    capsys.readouterr()
    assert main(["check", "--url", fresh_database, "--schema", "public", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == [
        warnings[0].removeprefix("warning: ")
    ]
