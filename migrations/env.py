"""Alembic environment for taskhub-pg.

Every run (online or `--sql`) is one transaction that:
  1. takes a transaction-scoped advisory lock keyed on the target schema, so
     concurrent deploy jobs running `upgrade` queue up instead of colliding;
  2. creates the target schema if needed;
  3. runs the revisions, recording them in <schema>.taskhub_pg_alembic_version;
  4. grants `-x runtime_role=R` what a runtime needs (`-x runtime_ddl=none`
     withholds the CREATE the duroxide runtime's connect needs); after a run
     that applied revisions, re-grants the runtime roles granted before, so
     objects of new revisions are covered;
  5. with `-x citus=schema`, distributes the hub on a Citus cluster (and
     after a run that applied revisions to a distributed hub, adjusts it again);
  6. after a run that applied revisions, records every function and view as
     it left them (taskhub_definitions, from revision 0012), which
     `taskhub-pg check` compares with the live catalogue;
  7. after a downgrade to base, drops that version table and the schema if it
     is left empty, so nothing stays behind.
"""

from __future__ import annotations

import os
from typing import Any

from alembic import context
from sqlalchemy import create_engine, pool

from provider.deploy import runtime_role
from provider.schema_name import quote_schema, validate_schema_name

VERSION_TABLE = "taskhub_pg_alembic_version"

config = context.config
x_args = context.get_x_argument(as_dictionary=True)


def _target_schema() -> str:
    name = x_args.get("schema") or config.attributes.get("schema") or "public"
    return validate_schema_name(name)


def _database_url() -> str:
    url = (
        x_args.get("url")
        or config.attributes.get("url")
        or os.environ.get("DATABASE_URL")
        or config.get_main_option("sqlalchemy.url")
    )
    if not url:
        if context.is_offline_mode():
            return "postgresql+psycopg://"
        raise SystemExit("taskhub-pg: no database URL: set DATABASE_URL or pass -x url=...")
    # psycopg 3 is the driver; accept plain libpq URLs.
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return str(url)


def _grant_statement() -> str | None:
    """The grant of `-x runtime_role=R`, or None when no role was given."""
    role = x_args.get("runtime_role") or config.attributes.get("runtime_role")
    if not role:
        return None
    mode = x_args.get("runtime_ddl") or config.attributes.get("runtime_ddl") or "guarded"
    try:
        return runtime_role.grant_statement(SCHEMA, role, mode)
    except runtime_role.InvalidRuntimeRole as error:
        raise SystemExit(f"taskhub-pg: {error}") from None


SCHEMA = _target_schema()
config.attributes["schema"] = SCHEMA
QUOTED = quote_schema(SCHEMA)

MIGRATION_LOCK = f"SELECT pg_advisory_xact_lock(hashtextextended('taskhub:{SCHEMA}:migrations', 0))"
CREATE_SCHEMA = f"CREATE SCHEMA IF NOT EXISTS {QUOTED}"
# At base the version table is empty: remove it, and the schema if nothing else is in it.
CLEAN_UP_AT_BASE = f"""
DO $cleanup$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {QUOTED}.{VERSION_TABLE}) THEN
        DROP TABLE {QUOTED}.{VERSION_TABLE};
        -- Only an empty schema goes. CASCADE reaches no object here (none
        -- depends on the schema); on a Citus cluster it also takes the
        -- sequences Citus left on the workers.
        IF '{SCHEMA}' <> 'public' AND NOT EXISTS (
               SELECT 1 FROM pg_depend
                WHERE refclassid = 'pg_namespace'::regclass
                  AND refobjid = '{QUOTED}'::regnamespace) THEN
            DROP SCHEMA {QUOTED} CASCADE;
        END IF;
    END IF;
END
$cleanup$
"""


def _citus_mode() -> str | None:
    mode = x_args.get("citus") or config.attributes.get("citus")
    if mode not in (None, "", "schema"):
        raise SystemExit(f"taskhub-pg: citus={mode}: the one mode is citus=schema")
    return mode or None


# From revision 0014: `-x citus=schema` distributes the hub on a Citus
# cluster; after a run that applied revisions to a hub already distributed,
# the same call puts back what the replaced functions' SET clauses undid.
CITUS = _citus_mode()
DISTRIBUTE_ON_CITUS = f"SELECT {QUOTED}.taskhub_distribute_on_citus()"
REDISTRIBUTE_IF_DISTRIBUTED = f"""
DO $citus$
BEGIN
    IF to_regclass('pg_catalog.pg_dist_schema') IS NOT NULL
       AND to_regproc('{QUOTED}.taskhub_distribute_on_citus') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_dist_schema
                    WHERE schemaid = to_regnamespace('{QUOTED}')) THEN
            PERFORM {QUOTED}.taskhub_distribute_on_citus();
        END IF;
    END IF;
END
$citus$
"""

# From revision 0012: what this run leaves, for the deploy gate to compare
# with (`taskhub-pg check`). Only after a run that applied revisions.
RECORD_DEFINITIONS = f"""
DO $record$
BEGIN
    IF to_regproc('{QUOTED}.taskhub_record_definitions') IS NOT NULL THEN
        PERFORM {QUOTED}.taskhub_record_definitions();
    END IF;
END
$record$
"""

GRANT_RUNTIME_ROLE = _grant_statement()
REFRESH_RUNTIME_ROLES = runtime_role.refresh_statement(SCHEMA)

# The revisions this run applied (upgrade or downgrade steps).
applied_steps: list[Any] = []

CONFIGURE: dict[str, Any] = {
    "version_table": VERSION_TABLE,
    "version_table_schema": SCHEMA,
    "transactional_ddl": True,
    "transaction_per_migration": False,
    "on_version_apply": lambda **applied: applied_steps.append(applied["step"]),
}


def _run_in_transaction() -> None:
    with context.begin_transaction():
        context.execute(MIGRATION_LOCK)
        context.execute(CREATE_SCHEMA)
        context.run_migrations()
        # Grant when asked to; else re-grant the runtime roles after a run that
        # changed the schema, never on a look (`alembic current`, `check`).
        if GRANT_RUNTIME_ROLE:
            context.execute(GRANT_RUNTIME_ROLE)
        elif applied_steps:
            context.execute(REFRESH_RUNTIME_ROLES)
        if CITUS:
            context.execute(DISTRIBUTE_ON_CITUS)
        elif applied_steps:
            context.execute(REDISTRIBUTE_IF_DISTRIBUTED)
        if applied_steps:
            context.execute(RECORD_DEFINITIONS)
        context.execute(CLEAN_UP_AT_BASE)


def run_migrations_offline() -> None:
    context.configure(
        url=_database_url(),
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        **CONFIGURE,
    )
    _run_in_transaction()


def run_migrations_online() -> None:
    engine = create_engine(_database_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, **CONFIGURE)
        _run_in_transaction()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
