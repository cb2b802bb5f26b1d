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

Before the first revision runs, the run locks every table its revisions
declare (LOCKS_ON_UPGRADE / LOCKS_ON_DOWNGRADE), in the hot path's order and
under a short lock_timeout (`-x lock_timeout_ms=100`). A lock not granted in
time rolls the whole transaction back; online, it is tried again with backoff
and jitter (`-x lock_attempts=10`), each wait logged with who held the table
(provider/deploy/table_locks.py). What the run did is logged at the end and
left in `config.attributes["run_report"]` (provider/deploy/run_report.py).
"""

from __future__ import annotations

import logging.config
import os
import random
import time
from typing import Any

from alembic import context
from alembic.runtime.migration import MigrationContext, RevisionStep
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import Connection

from provider.deploy import live_signatures, runtime_role, table_locks
from provider.deploy.run_report import (
    LockWait,
    MigrationLocksNotTaken,
    MigrationRun,
    RuntimeSignaturesChanged,
    UndeclaredTableLocks,
    log,
)
from provider.schema_name import quote_schema, validate_schema_name

VERSION_TABLE = "taskhub_pg_alembic_version"

config = context.config
# Run by the alembic command: alembic.ini's loggers (the lock waits and the
# summary of provider/deploy/run_report.py among them). From Python, the caller's.
if config.config_file_name:
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)
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


def _lock_policy() -> table_locks.LockPolicy:
    try:
        return table_locks.LockPolicy.from_options({**config.attributes, **x_args})
    except table_locks.InvalidLockOption as error:
        raise SystemExit(f"taskhub-pg: {error}") from None


LOCKS = _lock_policy()
RUN: MigrationRun = config.attributes.setdefault("run_report", MigrationRun(SCHEMA))
# The migration's backend, as operators and the deploy drill see it in pg_stat_activity.
APPLICATION_NAME = "taskhub-pg migration"


def _step_name(step: RevisionStep) -> str:
    source = ",".join(step.from_revisions) or "base"
    target = ",".join(step.to_revisions) or "base"
    return f"{source} -> {target}"


def _lock_before_the_first_revision(
    migration_context: MigrationContext, connection: Connection | None
) -> table_locks.LockPhase:
    """Have the run lock its revisions' tables before any of them runs.

    Alembic asks its work function for the steps just before running them, in
    the open transaction; wrapping that function is the one place where the
    steps are known and nothing has been applied yet."""
    attempt = table_locks.LockPhase(declared=[])
    work = migration_context._migrations_fn
    assert work is not None

    def steps_after_locking(heads: Any, ctx: MigrationContext) -> list[Any]:
        steps = list(work(heads, ctx))
        revisions = [step for step in steps if isinstance(step, RevisionStep)]
        RUN.from_revision = ",".join(heads) or None
        RUN.steps = [_step_name(step) for step in revisions]
        RUN.to_revision = (
            ",".join(revisions[-1].to_revisions) or None if revisions else RUN.from_revision
        )
        attempt.declared = table_locks.declared_tables(revisions)
        if connection is None:
            if attempt.declared:
                context.execute(table_locks.offline_lock_statement(SCHEMA, attempt.declared))
            RUN.locked_tables = attempt.declared
            return steps
        attempt.relations_before = table_locks.relations_before(connection, SCHEMA)
        attempt.signatures_before = _runtime_signatures(connection)
        present = table_locks.existing_tables(connection, SCHEMA, attempt.declared)
        table_locks.lock_tables(connection, SCHEMA, present)
        RUN.locked_tables = present
        attempt.locked_at = time.monotonic() if present else None
        return steps

    migration_context._migrations_fn = steps_after_locking
    return attempt


def _refuse_undeclared_locks(connection: Connection, attempt: table_locks.LockPhase) -> None:
    """A revision that took a strong lock it did not declare could have
    deadlocked with the hub: refuse it, so its test fails and nothing changes."""
    if attempt.relations_before is None:
        return
    undeclared = table_locks.undeclared_strong_locks(
        connection, attempt.relations_before, [*attempt.declared, VERSION_TABLE]
    )
    if undeclared:
        raise UndeclaredTableLocks(
            f"schema {SCHEMA}: nothing changed: the run took strong locks on"
            f" {', '.join(undeclared)} that its revisions do not declare"
            " (LOCKS_ON_UPGRADE / LOCKS_ON_DOWNGRADE, provider/deploy/table_locks.py)"
        )


def _runtime_signatures(connection: Connection) -> live_signatures.Signatures:
    rows = connection.exec_driver_sql(
        live_signatures.SIGNATURES_QUERY, live_signatures.query_parameters(QUOTED)
    )
    return live_signatures.signatures_from_rows(tuple(row) for row in rows)


def _refuse_signature_changes(connection: Connection, attempt: table_locks.LockPhase) -> None:
    """A running runtime has these signatures cached: a change would wedge it."""
    if attempt.signatures_before is None:
        return
    changed = live_signatures.changes(attempt.signatures_before, _runtime_signatures(connection))
    if changed:
        raise RuntimeSignaturesChanged(
            f"schema {SCHEMA}: nothing changed: the run would change functions that running"
            " runtimes have prepared (they would fail every call until restarted): "
            + " | ".join(changed)
        )


def _run_in_transaction(connection: Connection | None) -> table_locks.LockPhase:
    attempt = _lock_before_the_first_revision(context.get_context(), connection)
    with context.begin_transaction():
        context.execute(MIGRATION_LOCK)
        # From here on, every lock the run waits for gives up quickly.
        context.execute(f"SET LOCAL lock_timeout = {LOCKS.lock_timeout_ms}")
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
        if connection is not None:
            _refuse_undeclared_locks(connection, attempt)
            _refuse_signature_changes(connection, attempt)
    return attempt


def run_migrations_offline() -> None:
    context.configure(
        url=_database_url(),
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        **CONFIGURE,
    )
    _run_in_transaction(None)


def _lock_wait(connection: Connection, error: BaseException, number: int) -> LockWait:
    """The failed attempt, with who holds the table now (the attempt has rolled back)."""
    if connection.in_transaction():
        connection.rollback()
    if isinstance(error, table_locks.LockNotTaken):
        table, waited_ms = error.table, error.waited_ms
        found = [holder.describe() for holder in table_locks.holders(connection, SCHEMA, table)]
        connection.rollback()
    else:  # a lock a revision waited for later, or the server chose us as a deadlock victim
        table, waited_ms, found = str(getattr(error, "orig", error)).split("\n")[0], 0.0, []
    retry = LOCKS.backoff_s(number, random.Random()) if number < LOCKS.attempts else None
    return LockWait(number, table, round(waited_ms, 1), found, retry)


def _is_lock_failure(error: BaseException) -> bool:
    return isinstance(error, table_locks.LockNotTaken) or table_locks.sqlstate_of(error) in (
        table_locks.LOCK_NOT_AVAILABLE,
        table_locks.DEADLOCK_DETECTED,
    )


def _attempt_online(engine: Any, number: int) -> LockWait | None:
    """One attempt in a transaction of its own; the wait that failed it, or None."""
    applied_steps.clear()
    with engine.connect() as connection:
        context.configure(connection=connection, **CONFIGURE)
        try:
            attempt = _run_in_transaction(connection)
        except Exception as error:
            if not _is_lock_failure(error):
                raise
            return _lock_wait(connection, error, number)
    if attempt.locked_at is not None:
        RUN.locks_held_ms = round((time.monotonic() - attempt.locked_at) * 1000, 1)
    return None


def run_migrations_online() -> None:
    url = _database_url()
    connect_args = {} if "application_name=" in url else {"application_name": APPLICATION_NAME}
    engine = create_engine(url, poolclass=pool.NullPool, connect_args=connect_args)
    started = time.monotonic()
    try:
        for number in range(1, LOCKS.attempts + 1):
            RUN.attempts = number
            wait = _attempt_online(engine, number)
            if wait is None:
                break
            RUN.lock_waits.append(wait)
            log.warning("schema %s: %s", SCHEMA, wait.describe())
            if wait.retry_in_s is not None:
                time.sleep(wait.retry_in_s)
        else:
            RUN.duration_s = round(time.monotonic() - started, 3)
            raise MigrationLocksNotTaken(RUN.failure(LOCKS.lock_timeout_ms))
    finally:
        engine.dispose()
    RUN.duration_s = round(time.monotonic() - started, 3)
    log.info("%s", RUN.summary())


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
