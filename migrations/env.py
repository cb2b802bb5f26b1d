"""Alembic environment for taskhub-pg.

It reads its options (schema, url, runtime role, Citus, lock policy) from
one MigrationOptions (provider/deploy/migration_options.py): the one a caller
stored (provider.deploy.migrate, taskhub-pg), else the one the alembic
command line's -x arguments make.

A run (online or `--sql`) on one connection:
  1. takes a session advisory lock keyed on the target schema, so concurrent
     deploy jobs running `upgrade` queue up instead of colliding;
  2. creates the target schema if needed;
  3. runs each revision of an upgrade from 0006 on in a transaction of its
     own (those below it together, a downgrade whole), recording it in
     <schema>.taskhub_pg_alembic_version: the hub's calls wait on one
     revision at a time, never on the whole run, and every commit leaves a
     released revision the runtime runs on;
  4. then, in one last transaction: grants `-x runtime_role=R` what a runtime
     needs (`-x runtime_ddl=none` withholds the CREATE the duroxide runtime's
     connect needs), or after a run that applied revisions, re-grants the
     runtime roles granted before, so objects of new revisions are covered;
     with `-x citus=schema`, distributes the hub on a Citus cluster (and after
     a run that applied revisions to a distributed hub, adjusts it again);
     after a run that applied revisions, records every function and view as
     it left them (taskhub_definitions, from revision 0012), which
     `taskhub-pg check` compares with the live catalogue; after a downgrade to
     base, drops that version table and the schema if it is left empty.

Each revision locks the tables it declares (LOCKS_ON_UPGRADE /
LOCKS_ON_DOWNGRADE, in the hot path's order) under a short lock_timeout
(`-x lock_timeout_ms=100`), after closing the hub's call gate if any of them
is one the hub's calls use (revision 0015: gated calls then wait at their
first statement, never half-way through a body); the gate closes at the
latest for the commit. Before each commit the run refuses a strong lock it
did not declare, and a change to a function the runtime calls
(provider/deploy/revision_guard.py). A lock not granted
in time rolls that revision back; online, the run goes on again from there
with backoff and jitter (`-x lock_attempts=15`; the later attempts wait up to
three times lock_timeout_ms), each wait logged with who
held the lock (provider/deploy/table_locks.py). What the run did is logged at
the end and left in `config.attributes["run_report"]`
(provider/deploy/run_report.py).
"""

from __future__ import annotations

import logging.config
import time
from typing import Any

import psycopg
from alembic import context
from alembic.runtime.migration import MigrationContext, RevisionStep
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import Connection

from provider.deploy import (
    citus,
    migration_options,
    privileged_fence,
    runtime_role,
    session_pinning,
    table_locks,
    turn_form,
)
from provider.deploy.migration_options import InvalidMigrationOption, MigrationOptions
from provider.deploy.migration_steps import execute_sql
from provider.deploy.node_gate import NodeGate
from provider.deploy.revision_guard import RevisionGuard
from provider.deploy.run_report import LockWait, MigrationLocksNotTaken, MigrationRun, log
from provider.deploy.version_table import VERSION_TABLE
from provider.schema_name import quote_schema

config = context.config
# Run by the alembic command: alembic.ini's loggers (the lock waits and the
# summary of provider/deploy/run_report.py among them). From Python, the caller's.
if config.config_file_name:
    logging.config.fileConfig(config.config_file_name, disable_existing_loggers=False)


def _options() -> MigrationOptions:
    """The run's options (provider/deploy/migration_options.py): stored by
    the caller, else the alembic command line's -x arguments."""
    try:
        return migration_options.of_run(config, context.get_x_argument(as_dictionary=True))
    except InvalidMigrationOption as error:
        raise SystemExit(f"taskhub-pg: {error}") from None


def _database_url() -> str:
    try:
        return OPTIONS.database_url(
            offline=context.is_offline_mode(), configured=config.get_main_option("sqlalchemy.url")
        )
    except InvalidMigrationOption as error:
        raise SystemExit(f"taskhub-pg: {error}") from None


def _grant_statements() -> tuple[str, str] | None:
    """The check made before any revision and the grant made after them, of
    the runtime_role option; None when no role was given."""
    role, mode = OPTIONS.runtime_role, OPTIONS.runtime_ddl
    if not role:
        return None
    return (
        runtime_role.precheck_statement(SCHEMA, role, mode),
        runtime_role.grant_statement(SCHEMA, role, mode),
    )


OPTIONS = _options()
SCHEMA = OPTIONS.schema
QUOTED = quote_schema(SCHEMA)

# A session lock: a run spans several transactions, and its connection ends
# with it (a --sql script's psql session likewise).
MIGRATION_LOCK = f"SELECT pg_advisory_lock(hashtextextended('taskhub:{SCHEMA}:migrations', 0))"
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


# From revision 0014: `-x citus=schema` distributes the hub on a Citus
# cluster; after a run that applied revisions to a hub already distributed,
# the same call puts back what the replaced functions' SET clauses undid.
CITUS = OPTIONS.citus
DISTRIBUTE_ON_CITUS = f"SELECT {QUOTED}.taskhub_distribute_on_citus()"
# Checked before any revision (each upgrade revision commits on its own), with
# the words taskhub_distribute_on_citus uses.
PRECHECK_CITUS = """
DO $citus$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'citus=schema needs the Citus extension in this database'
            USING ERRCODE = '0A000',
                  HINT = 'CREATE EXTENSION citus on the coordinator, add its workers, and run '
                         'the migration there; or migrate without citus=schema';
    END IF;
END
$citus$
"""


REDISTRIBUTE_IF_DISTRIBUTED = citus.on_a_distributed_hub(SCHEMA, "taskhub_distribute_on_citus")
# From revision 0022: on a distributed hub the runtime DDL guard goes on every
# worker too, by run_command_on_workers, whose connections see only what is
# committed: after the run's commit, the guard is rebuilt once more (a hub
# the run created or distributed has its workers' guard from here).
GUARD_THE_WORKERS = citus.guard_the_workers(SCHEMA)

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

# A session that can do more than the hub's owner runs only packaged code
# (provider/deploy/privileged_fence.py): the fence first in each transaction,
# the hand-back last. Every session resolves names in pg_catalog only: an
# unqualified call must never find a function a lesser role created.
FENCE = privileged_fence.fence_statement(SCHEMA)
HAND_BACK = privileged_fence.hand_back_statement(SCHEMA)
PINNED_SEARCH_PATH = privileged_fence.PINNED_SEARCH_PATH

PRECHECK_RUNTIME_ROLE, GRANT_RUNTIME_ROLE = _grant_statements() or (None, None)
REFRESH_RUNTIME_ROLES = runtime_role.refresh_statement(SCHEMA)

# The revisions this run applied (upgrade or downgrade steps).
applied_steps: list[Any] = []


def _direction() -> str:
    """upgrade or downgrade: from provider.deploy.migrate, else from the
    alembic command line; anything else runs as one transaction."""
    if OPTIONS.direction:
        return OPTIONS.direction
    command = getattr(getattr(config, "cmd_opts", None), "cmd", None)
    return getattr(command[0], "__name__", "") if command else ""


# Upgrades commit revision by revision, a downgrade is one transaction
# (provider/deploy/revision_guard.py says why). An upgrade commits on its own
# only the revisions from COMMIT_EACH_FROM on: those below it run in one
# transaction, so that the procedures of 0001-0005 (a fetch that fixes the
# lease end when it claims the instance, and can deadlock with an ack) never
# serve a live runtime, not even between two revisions of an adoption.
UPGRADE = _direction() == "upgrade"
COMMIT_EACH_FROM = 6
PASS: dict[str, Any] = {"per_revision": False, "limit": None}  # this pass of the run


def _step_name(step: Any) -> str:
    """ "0005 -> 0006" for Alembic's MigrationInfo of an applied revision."""
    source = ",".join(step.source_revision_ids) or "base"
    target = ",".join(step.destination_revision_ids) or "base"
    return f"{source} -> {target}"


def _dbapi(connection: Connection) -> psycopg.Connection[Any]:
    raw: psycopg.Connection[Any] = connection.connection.dbapi_connection  # type: ignore[assignment]
    return raw


def _same_session() -> None:
    """Online, the transaction under way must be on the run's server session
    (provider/deploy/session_pinning.py)."""
    pinned = PINNED.get("pin")
    if pinned is not None and pinned.pooled:
        session_pinning.check(_dbapi(context.get_bind()), pinned)


def _applied(**applied: Any) -> None:
    """Alembic calls this after each revision, just before its commit."""
    _same_session()
    applied_steps.append(applied["step"])
    RUN.steps.append(_step_name(applied["step"]))
    RUN.first_revision_done_at = RUN.first_revision_done_at or time.time()
    RUN.to_revision = ",".join(sorted(applied["heads"])) or None
    if PASS["per_revision"]:
        _hand_back()
        GUARD.transaction_committed()


CONFIGURE: dict[str, Any] = {
    "version_table": VERSION_TABLE,
    "version_table_schema": SCHEMA,
    "transactional_ddl": True,
    "on_version_apply": _applied,
}


def _passes(new_hub: bool = False) -> list[tuple[bool, int | None]]:
    """(each revision commits on its own, the highest revision this pass
    applies): a downgrade in one pass; an upgrade up to COMMIT_EACH_FROM in
    one transaction, then revision by revision. A --sql script is one
    transaction: a DBA applies it whole. So is the upgrade that creates a hub:
    nothing serves it yet, and no runtime sees it before it is whole (its
    fetch hands over json from the start: provider/deploy/turn_form.py)."""
    if not UPGRADE or new_hub or context.is_offline_mode():
        return [(False, None)]
    return [(False, COMMIT_EACH_FROM), (True, None)]


def _holds_a_hub(connection: Connection) -> bool:
    row = connection.exec_driver_sql(
        f"SELECT to_regclass('{QUOTED.replace(chr(39), chr(39) * 2)}.instances') IS NOT NULL"
    ).fetchone()
    connection.rollback()  # the look ends its transaction: the run begins its own
    return bool(row and row[0])


def _configure(per_revision: bool, limit: int | None, **connect: Any) -> None:
    PASS["per_revision"], PASS["limit"] = per_revision, limit
    context.configure(transaction_per_migration=per_revision, **connect, **CONFIGURE)


LOCKS = OPTIONS.locks
RUN: MigrationRun = config.attributes.setdefault("run_report", MigrationRun(SCHEMA))
GUARD = RevisionGuard(SCHEMA, RUN, None, execute_sql, fence=FENCE)
# Online the run asks once whether its session is privileged, and leaves the
# fence out when it is not; a --sql script carries it (it checks itself).
FENCED = {"on": True}


def _fence() -> None:
    if FENCED["on"]:
        context.execute(FENCE)


def _hand_back() -> None:
    if FENCED["on"]:
        context.execute(HAND_BACK)


def _ask_if_privileged(connection: Connection) -> None:
    row = connection.exec_driver_sql(privileged_fence.privileged_query(SCHEMA)).fetchone()
    connection.rollback()  # the look ends its transaction: the run begins its own
    FENCED["on"] = bool(row and row[0])
    GUARD.fence = FENCE if FENCED["on"] else None


# The migration's backend, as operators and the deploy drill see it in pg_stat_activity.
APPLICATION_NAME = "taskhub-pg migration"


def _guard_each_revision(migration_context: MigrationContext) -> None:
    """Alembic asks its work function for the steps just before running them;
    wrapping that function is the one place where every step can be wrapped."""
    work = migration_context._migrations_fn
    assert work is not None

    def guarded_steps(heads: Any, ctx: MigrationContext) -> list[Any]:
        if RUN.from_revision is None and not RUN.steps:
            RUN.from_revision = ",".join(heads) or None
        RUN.to_revision = RUN.to_revision or RUN.from_revision
        steps = list(work(heads, ctx))
        GUARD.steps_planned([step for step in steps if isinstance(step, RevisionStep)])
        limit = PASS["limit"]
        if limit is not None:  # this pass stops at that revision
            steps = [s for s in steps if int(s.revision.revision) <= limit]
        revisions = [step for step in steps if isinstance(step, RevisionStep)]
        for step in revisions:
            step.migration_fn = GUARD.guarded(
                step, step.migration_fn, bool(PASS["per_revision"]), up_front=UPGRADE
            )
        return steps

    migration_context._migrations_fn = guarded_steps


def _transaction() -> Any:
    """A transaction of the kind each revision gets: a real one (BEGIN/COMMIT
    in a --sql script) when revisions commit one by one, else none (inside
    the run's one transaction)."""
    return context.get_context().begin_transaction(_per_migration=True)


def _run(connection: Connection | None, first: bool = True, final: bool = True) -> None:
    """One pass: the preamble before the first, the grants, records and
    clean-up after the final one."""
    GUARD.connection = connection
    GUARD.transaction_started()
    _guard_each_revision(context.get_context())
    with context.begin_transaction():  # the pass's one transaction, unless per revision
        if first:
            with _transaction():
                _same_session()
                # Queue behind other deploy jobs of this schema (no timeout),
                # then give up quickly on every other lock.
                context.execute(PINNED_SEARCH_PATH)
                context.execute(MIGRATION_LOCK)
                context.execute(f"SET lock_timeout = {LOCKS.timeout_ms(RUN.attempts or 1)}")
                # Calls wait while a revision holds the gate: no compile-check
                # of each plpgsql body as it is created. The test suite
                # compiles every body; pg_dump's restores do the same.
                context.execute("SET check_function_bodies = off")
                if PRECHECK_RUNTIME_ROLE:
                    context.execute(PRECHECK_RUNTIME_ROLE)
                if CITUS:
                    context.execute(PRECHECK_CITUS)
                # Whether this run creates the hub (revision 0017 reads it):
                # decided where the run happens, a --sql script too.
                context.execute(turn_form.new_hub_mark(SCHEMA))
                context.execute(CREATE_SCHEMA)
        context.run_migrations()
        if final:
            with _transaction():
                _fence()
                # Grant when asked to; else re-grant the runtime roles after a
                # run that changed the schema, never on a look (`alembic current`).
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
                _hand_back()
        if not PASS["per_revision"]:
            _hand_back()
            GUARD.before_commit()  # the pass's one transaction commits next
    GUARD.transaction_committed()
    if final and (CITUS or applied_steps or GRANT_RUNTIME_ROLE):
        with context.begin_transaction():
            _fence()
            context.execute(GUARD_THE_WORKERS)
            _hand_back()
    # The session's migration lock goes with the connection, after the last commit.


def run_migrations_offline() -> None:
    passes = _passes()
    for number, (per_revision, limit) in enumerate(passes, start=1):
        _configure(
            per_revision,
            limit,
            # A script connects nowhere: the dialect alone, whatever the URL
            # says (SQLAlchemy's parser cannot read a multi-host URL).
            url="postgresql+psycopg://",
            literal_binds=True,
            dialect_opts={"paramstyle": "named"},
        )
        _run(None, first=number == 1, final=number == len(passes))


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
    retry = LOCKS.backoff_s(number) if number < LOCKS.attempts else None
    return LockWait(number, table, round(waited_ms, 1), found, retry)


def _is_lock_failure(error: BaseException) -> bool:
    return isinstance(error, table_locks.LockNotTaken) or table_locks.sqlstate_of(error) in (
        table_locks.LOCK_NOT_AVAILABLE,
        table_locks.DEADLOCK_DETECTED,
    )


def _attempt_online(engine: Any, number: int) -> LockWait | None:
    """One attempt: the revisions still to apply, each in its own transaction;
    the wait that stopped it, or None."""
    with engine.connect() as connection:
        try:
            passes = _passes(new_hub=not _holds_a_hub(connection))
            _ask_if_privileged(connection)
            for pass_number, (per_revision, limit) in enumerate(passes, start=1):
                _configure(per_revision, limit, connection=connection)
                _run(connection, first=pass_number == 1, final=pass_number == len(passes))
        except Exception as error:
            if not _is_lock_failure(error):
                raise
            return _lock_wait(connection, error, number)
        finally:
            if GUARD.node_gate is not None:
                GUARD.node_gate.open()  # after a failure; a commit opened it already
            pinned = PINNED.get("pin")
            if pinned is not None:
                session_pinning.release(_dbapi(connection), pinned)
    return None


# The server session the online run's connection reached (session_pinning.Pin).
PINNED: dict[str, session_pinning.Pin] = {}


def _libpq_url(url: str) -> str:
    """The URL as libpq takes it, unparsed by SQLAlchemy: a multi-host URL
    (h1:p1,h2:p2), a keyword string and every other libpq form reach libpq whole."""
    prefix = "postgresql+psycopg://"
    return "postgresql://" + url[len(prefix) :] if url.startswith(prefix) else url


def _connector(url: str, connect_args: dict[str, Any]) -> Any:
    """SQLAlchemy's creator: each connection made by libpq from the URL as
    given; first the look at which server session it reached, then the
    search_path pinned, before the run's first look at the hub."""

    def connect() -> psycopg.Connection[Any]:
        conn = psycopg.connect(url, prepare_threshold=None, **connect_args)
        try:
            PINNED["pin"] = session_pinning.pin(conn, url, connect_args)
            conn.execute(PINNED_SEARCH_PATH)
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    return connect


def run_migrations_online() -> None:
    url = _libpq_url(_database_url())
    connect_args = {} if "application_name=" in url else {"application_name": APPLICATION_NAME}
    engine = create_engine(
        "postgresql+psycopg://", poolclass=pool.NullPool, creator=_connector(url, connect_args)
    )
    # On a hub distributed by Citus the run closes the call gate on its node too.
    GUARD.node_gate = NodeGate(url, SCHEMA)
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
            waits = (LOCKS.lock_timeout_ms, LOCKS.timeout_ms(LOCKS.attempts))
            raise MigrationLocksNotTaken(RUN.failure(*waits))
    finally:
        engine.dispose()
    RUN.duration_s = round(time.monotonic() - started, 3)
    log.info("%s", RUN.summary())


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
