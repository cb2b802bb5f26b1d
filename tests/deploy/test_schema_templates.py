"""The tests' schemas are clones of one migrated per session
(tests/support/templates.py): a clone must be the schema `alembic upgrade
head` makes, for each kind of schema the tests ask for."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from devkit.roles import LoginRole
from devkit.schema.catalogue import snapshot
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.drift import check
from tests.support.templates import SchemaTemplates


@pytest.mark.parametrize(
    ("granted", "revision"),
    [(False, "head"), (True, "head"), (False, "0023")],
    ids=["plain", "runtime-role", "at-0023"],
)
def test_a_cloned_schema_is_the_schema_the_migrations_make(
    granted: bool,
    revision: str,
    database_url: str,
    runtime_login: LoginRole,
    sql: psycopg.Connection[Any],
) -> None:
    grant: dict[str, Any] = {"runtime_role": runtime_login.name, "runtime_ddl": "none"}
    grant = grant if granted else {}
    templates = SchemaTemplates(database_url)
    cloned = templates.create(new_schema_name("cl"), **grant, revision=revision)
    migrated = new_schema_name("mg")
    migrate.upgrade(database_url, migrated, revision, **grant)

    assert templates.dumps_schemas(), "pg_dump could not dump the template: nothing was cloned"
    from_clone, from_migrations = snapshot(sql, cloned), snapshot(sql, migrated)
    assert from_clone.keys() == from_migrations.keys()
    for kind in from_migrations:
        assert from_clone[kind] == from_migrations[kind], kind
    version = sql.execute(f'SELECT version_num FROM "{cloned}".taskhub_pg_alembic_version')
    head = migrate.head_revision()
    assert version.fetchall() == [(head if revision == "head" else revision,)]
    # The definitions the migration recorded are the clone's own, as they are
    # a migrated schema's: `taskhub-pg check` finds the same in both (at head,
    # nothing; before it, the revisions still to run).
    from_clone_check, from_migrations_check = (
        check(database_url, cloned),
        check(database_url, migrated),
    )
    assert from_clone_check.problems == from_migrations_check.problems
    assert from_clone_check.ok == (revision == "head"), from_clone_check.problems


def test_each_set_of_templates_has_templates_of_its_own(
    database_url: str, runtime_login: LoginRole, sql: psycopg.Connection[Any]
) -> None:
    """Another set's first template may be of another kind: a plain clone must
    not come from a template granted to the runtime role."""
    SchemaTemplates(database_url).create(
        new_schema_name("cl"), runtime_role=runtime_login.name, runtime_ddl="none"
    )
    plain = SchemaTemplates(database_url).create(new_schema_name("cl"))
    granted = sql.execute(
        "SELECT count(*) FROM pg_proc AS p WHERE p.pronamespace = %s::regnamespace"
        " AND has_function_privilege(%s, p.oid, 'EXECUTE')",
        [plain, runtime_login.name],
    ).fetchone()
    assert granted == (0,)
