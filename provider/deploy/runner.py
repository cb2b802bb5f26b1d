"""A migration run: what migrations/env.py builds from Alembic's context and
calls, online (connected) or offline (`--sql`, a script for psql).

A run on one connection:
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

Each revision locks the tables it declares (locks_on_upgrade /
locks_on_downgrade in its revision.toml, in the hot path's order) under a short lock_timeout
(`-x lock_timeout_ms=100`), after closing the hub's call gate if any of them
is one the hub's calls use (revision 0015: gated calls then wait at their
first statement, never half-way through a body); the gate closes at the
latest for the commit. Before each commit the run refuses a strong lock it
did not declare, and a change to a function the runtime calls
(provider/deploy/revision_guard.py). A lock not granted in time rolls that
revision back; online, the run goes on again from there with backoff and
jitter (`-x lock_attempts=15`; the later attempts wait up to three times
lock_timeout_ms), each wait logged with who held the lock
(provider/deploy/table_locks.py). What the run did is logged at the end and
left in `config.attributes["run_report"]` (provider/deploy/run_report.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import psycopg
from alembic import context
from alembic.config import Config
from alembic.runtime.migration import MigrationContext, MigrationStep, RevisionStep
from alembic.util import CommandError
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import Connection, Engine

from provider.deploy import (
    ddl_guard,
    migration_options,
    privileged_session,
    runtime_role,
    session_pinning,
    table_locks,
)
from provider.deploy.migration_options import InvalidMigrationOption, MigrationOptions
from provider.deploy.migration_steps import execute_sql
from provider.deploy.node_gate import NodeGate
from provider.deploy.refusals import MigrationLocksNotTaken, MigrationRefused
from provider.deploy.revision_guard import RevisionGuard
from provider.deploy.run_report import LockWait, MigrationRun, log
from provider.deploy.run_statements import PRECHECK_CITUS, RunStatements
from provider.deploy.version_table import VERSION_TABLE
from provider.schema_name import quote_schema

# Upgrades commit revision by revision, a downgrade is one transaction
# (provider/deploy/revision_guard.py says why). An upgrade commits on its own
# only the revisions from COMMIT_EACH_FROM on: those below it run in one
# transaction, so that the procedures of 0001-0005 (a fetch that fixes the
# lease end when it claims the instance, and can deadlock with an ack) never
# serve a live runtime, not even between two revisions of an adoption.
COMMIT_EACH_FROM = 6

# The migration's backend, as operators and the deploy drill see it in pg_stat_activity.
APPLICATION_NAME = "taskhub-pg migration"

StepsOf = Callable[[Any, MigrationContext], Iterable[MigrationStep]]


@dataclass(frozen=True)
class Pass:
    """A part of a run: whether each of its revisions commits on its own,
    and the highest revision it applies (None: up to the target)."""

    per_revision: bool
    limit: int | None = None


def _step_name(step: Any) -> str:
    """ "0005 -> 0006" for Alembic's MigrationInfo of an applied revision."""
    source = ",".join(step.source_revision_ids) or "base"
    target = ",".join(step.destination_revision_ids) or "base"
    return f"{source} -> {target}"


def _dbapi(connection: Connection) -> psycopg.Connection[Any]:
    raw: psycopg.Connection[Any] = connection.connection.dbapi_connection  # type: ignore[assignment]
    return raw


def _ini_url(config: Config) -> str | None:
    """alembic.ini's sqlalchemy.url; None without an alembic.ini (the alembic
    command line can find the migrations from pyproject.toml alone)."""
    if not config.file_config.has_section(config.config_ini_section):
        return None
    return config.get_main_option("sqlalchemy.url")


def _libpq_url(url: str) -> str:
    """The URL as libpq takes it, unparsed by SQLAlchemy: a multi-host URL
    (h1:p1,h2:p2), a keyword string and every other libpq form reach libpq whole."""
    prefix = "postgresql+psycopg://"
    return "postgresql://" + url[len(prefix) :] if url.startswith(prefix) else url


def _is_lock_failure(error: BaseException) -> bool:
    return isinstance(error, table_locks.LockNotTaken) or table_locks.sqlstate_of(error) in (
        table_locks.LOCK_NOT_AVAILABLE,
        table_locks.DEADLOCK_DETECTED,
    )


def _beyond(step: MigrationStep, limit: int) -> bool:
    return isinstance(step, RevisionStep) and int(step.revision.revision) > limit


def _options() -> MigrationOptions:
    """The run's options (provider/deploy/migration_options.py): stored by
    the caller, else the alembic command line's -x arguments."""
    try:
        return migration_options.of_run(context.config, context.get_x_argument(as_dictionary=True))
    except InvalidMigrationOption as error:
        raise SystemExit(f"taskhub-pg: {error}") from None


def _direction(options: MigrationOptions) -> str:
    """upgrade or downgrade: from provider.deploy.migrate, else from the
    alembic command line; anything else runs as one transaction."""
    if options.direction:
        return options.direction
    command = getattr(getattr(context.config, "cmd_opts", None), "cmd", None)
    return getattr(command[0], "__name__", "") if command else ""


class MigrationRunner:
    """One run of the revisions Alembic's command asks for, wrapped in the
    run's own statements, its revision guard and its lock attempts."""

    def __init__(self, options: MigrationOptions) -> None:
        self.options = options
        self.schema = options.schema
        self.statements = RunStatements.of(options, online=not context.is_offline_mode())
        self.upgrade = _direction(options) == "upgrade"
        self.report: MigrationRun = context.config.attributes.setdefault(
            "run_report", MigrationRun(self.schema)
        )
        self.guard = RevisionGuard(self.schema, self.report, None, execute_sql)
        # Online, whether this run puts the runtime role in the database's DDL
        # guard itself (its role may create event triggers): asked once.
        self.installs_guard = False
        self.applied_steps: list[Any] = []  # the revisions this run applied
        self.current = Pass(per_revision=False)
        # The server session the online run's connection reached.
        self.pinned: session_pinning.Pin | None = None
        # The command's own step function (upgrade or downgrade), which the
        # run wraps (_guarded_steps); Alembic hands it to env.py only in the
        # options of the context it configures.
        self.command_steps: StepsOf | None = None

    @classmethod
    def for_alembic_run(cls) -> MigrationRunner:
        """The runner of the Alembic command under way (env.py's one call)."""
        return cls(_options())

    def run(self) -> None:
        try:
            if context.is_offline_mode():
                self.run_offline()
            else:
                self.run_online()
        except MigrationRefused as refused:
            if getattr(context.config, "cmd_opts", None) is None:
                raise  # from Python (provider.deploy.migrate): the refusal itself
            # The alembic command line prints a CommandError as one line.
            raise CommandError(str(refused)) from refused

    # -- the passes -------------------------------------------------------
    def passes(self, new_hub: bool = False) -> list[Pass]:
        """A downgrade in one pass; an upgrade up to COMMIT_EACH_FROM in one
        transaction, then revision by revision. A --sql script is one
        transaction: a DBA applies it whole. So is the upgrade that creates a
        hub: nothing serves it yet, and no runtime sees it before it is whole
        (its fetch hands over json from the start: provider/deploy/turn_form.py)."""
        if not self.upgrade or new_hub or context.is_offline_mode():
            return [Pass(per_revision=False)]
        return [Pass(per_revision=False, limit=COMMIT_EACH_FROM), Pass(per_revision=True)]

    def configure(self, this_pass: Pass, **connect: Any) -> None:
        self.current = this_pass
        settings: dict[str, Any] = {
            "version_table": VERSION_TABLE,
            "version_table_schema": self.schema,
            "transactional_ddl": True,
            "on_version_apply": self._applied,
            "transaction_per_migration": this_pass.per_revision,
        }
        if self.command_steps is None:
            # The first configure reads the command's step function (public:
            # MigrationContext.environment_context, EnvironmentContext.context_opts).
            context.configure(**connect, **settings)
            environment = context.get_context().environment_context
            assert environment is not None
            self.command_steps = environment.context_opts["fn"]
        # `fn` is passed on to the MigrationContext, as Alembic's commands pass theirs.
        context.configure(**connect, **settings, fn=self._guarded_steps)

    def _guarded_steps(self, heads: Any, migration_context: MigrationContext) -> list[Any]:
        """The command's steps, each revision wrapped in the guard: Alembic
        asks for them just before running them."""
        assert self.command_steps is not None
        report = self.report
        if report.from_revision is None and not report.steps:
            report.from_revision = ",".join(heads) or None
        report.to_revision = report.to_revision or report.from_revision
        steps = list(self.command_steps(heads, migration_context))
        self.guard.steps_planned([step for step in steps if isinstance(step, RevisionStep)])
        limit = self.current.limit
        if limit is not None:  # this pass stops at that revision
            steps = [s for s in steps if not _beyond(s, limit)]
        for step in steps:
            if isinstance(step, RevisionStep):
                step.migration_fn = self.guard.guarded(
                    step, step.migration_fn, self.current.per_revision, up_front=self.upgrade
                )
        return steps

    def _applied(self, **applied: Any) -> None:
        """Alembic calls this after each revision, just before its commit."""
        self._same_session()
        self.applied_steps.append(applied["step"])
        report = self.report
        report.steps.append(_step_name(applied["step"]))
        report.first_revision_done_at = report.first_revision_done_at or time.time()
        report.to_revision = ",".join(sorted(applied["heads"])) or None
        if self.current.per_revision:
            self.guard.transaction_committed()

    # -- one pass ---------------------------------------------------------
    def _same_session(self) -> None:
        """Online, the transaction under way must be on the run's server
        session (provider/deploy/session_pinning.py)."""
        if self.pinned is not None and self.pinned.pooled:
            session_pinning.check(_dbapi(context.get_bind()), self.pinned)

    def _in_a_new_transaction(self, statements: Callable[[], None]) -> None:
        """After revisions that each committed on their own: a transaction of
        its own, configured for it."""
        connection = self.guard.connection
        if connection is not None and connection.in_transaction():
            # Only Alembic's look at the version table since the last revision's
            # commit: a context configured on an open transaction would never commit.
            connection.commit()
        self.configure(Pass(per_revision=False), connection=connection)
        with context.begin_transaction():
            statements()

    def _preamble(self) -> None:
        statements = self.statements
        self._same_session()
        # Queue behind other deploy jobs of this schema (no timeout), then
        # give up quickly on every other lock.
        context.execute(privileged_session.PIN_STATEMENT)
        if context.is_offline_mode():
            # Online the run asked already (_refuse_if_privileged); a script
            # asks where it runs, first, and again under the lock below.
            context.execute(statements.refuse_privileged)
        context.execute(statements.migration_lock)
        context.execute(
            f"SET lock_timeout = {self.options.locks.timeout_ms(self.report.attempts or 1)}"
        )
        # Calls wait while a revision holds the gate: no compile-check of each
        # plpgsql body as it is created. The test suite compiles every body;
        # pg_dump's restores do the same.
        context.execute("SET check_function_bodies = off")
        if statements.precheck_runtime_role:
            context.execute(statements.precheck_runtime_role)
        if self.options.citus:
            context.execute(PRECHECK_CITUS)
        context.execute(statements.new_hub_mark)
        context.execute(statements.create_schema)
        # Asked again now that this run holds the schema's migration lock and
        # the schema is there: between the first look and the lock, another
        # role may have created the schema (a new hub) or taken it over.
        if context.is_offline_mode():
            context.execute(statements.refuse_privileged)
        else:
            self._refuse_if_privileged_now()

    def run_pass(self, connection: Connection | None, first: bool, final: bool) -> None:
        """One pass: the preamble before the first, the grants, records and
        clean-up after the final one."""
        self.guard.connection = connection
        self.guard.transaction_started()
        per_revision = self.current.per_revision
        # The pass's one transaction; none when each revision commits on its own.
        with context.begin_transaction():
            if first:
                assert not per_revision  # the preamble is in the first transaction
                self._preamble()
            context.run_migrations()
            if final and per_revision:
                self._in_a_new_transaction(self._final_statements)
            elif final:
                self._final_statements()
            if not per_revision:
                self.guard.before_commit()  # the pass's one transaction commits next
        self.guard.transaction_committed()
        # On a Citus coordinator the guard this run changed goes on every
        # worker too, once committed (provider/deploy/ddl_guard.py).
        if final and self.installs_guard and connection is not None:
            ddl_guard.guard_the_workers(_dbapi(connection))
        # The session's migration lock goes with the connection, after the last commit.

    def _final_statements(self) -> None:
        statements = self.statements
        # Grant when asked to (after the guard's part, where this role may
        # install the guard); else re-grant the runtime roles after a run
        # that changed the schema, never on a look (`alembic current`).
        if statements.grant_runtime_role:
            if self.installs_guard:
                self._guard_the_runtime_role()
            context.execute(statements.grant_runtime_role)
        elif self.applied_steps:
            context.execute(statements.refresh_runtime_roles)
        if self.options.citus:
            context.execute(statements.distribute_on_citus)
        elif self.applied_steps:
            context.execute(statements.redistribute_if_distributed)
        if self.applied_steps:
            context.execute(statements.record_definitions)
        if not self.upgrade:
            self._forget_the_guard()
        context.execute(statements.clean_up_at_base)

    def _forget_the_guard(self) -> None:
        """Below 0005 a hub has no runtime roles: a downgrade there, by a role
        that may change the database's DDL guard, takes the hub's roles out
        of it (provider/deploy/ddl_guard.py). Online only; elsewhere they stay
        named until a guard step takes them out."""
        to = self.report.to_revision
        if context.is_offline_mode() or (to is not None and to >= "0005"):
            return
        conn = _dbapi(context.get_bind())
        if runtime_role.can_create_event_triggers(conn):
            ddl_guard.forget_hub(conn, self.schema)

    def _guard_the_runtime_role(self) -> None:
        """The guard's part of the grant (provider/deploy/ddl_guard.py), by a
        run whose role may create event triggers: it owns the hub, so the
        hub's owner is this session's role."""
        role = self.options.runtime_role
        assert role is not None
        conn = _dbapi(context.get_bind())
        row = conn.execute("SELECT current_user::text").fetchone()
        assert row is not None
        runtime_role.guard(conn, self.schema, role, str(row[0]))

    # -- offline ----------------------------------------------------------
    def run_offline(self) -> None:
        passes = self.passes()
        for number, this_pass in enumerate(passes, start=1):
            self.configure(
                this_pass,
                # A script connects nowhere: the dialect alone, whatever the
                # URL says (SQLAlchemy's parser cannot read a multi-host URL).
                url="postgresql+psycopg://",
                literal_binds=True,
                dialect_opts={"paramstyle": "named"},
            )
            self.run_pass(None, first=number == 1, final=number == len(passes))

    # -- online -----------------------------------------------------------
    def _database_url(self) -> str:
        try:
            return self.options.database_url(offline=False, configured=_ini_url(context.config))
        except InvalidMigrationOption as error:
            raise SystemExit(f"taskhub-pg: {error}") from None

    def _holds_a_hub(self, connection: Connection) -> bool:
        quoted = quote_schema(self.schema).replace("'", "''")
        row = connection.exec_driver_sql(
            f"SELECT to_regclass('{quoted}.instances') IS NOT NULL"
        ).fetchone()
        connection.rollback()  # the look ends its transaction: the run begins its own
        return bool(row and row[0])

    def _refuse_if_privileged(self, connection: Connection) -> None:
        """A session that can do more than the hub's owner migrates nothing
        (provider/deploy/privileged_session.py): the owner does, in its own.
        Then whether this run installs the runtime role's guard itself."""
        conn = _dbapi(connection)
        found = privileged_session.standing(conn, self.schema)
        privileged_session.refuse_privileged(found, "a migration", hub_required=False)
        options = self.options
        self.installs_guard = bool(
            options.runtime_role
            and options.runtime_ddl == "guarded"
            and runtime_role.can_create_event_triggers(conn)
        )
        connection.rollback()  # the look ends its transaction: the run begins its own

    def _refuse_if_privileged_now(self) -> None:
        """The same look, in the run's transaction, under its migration lock:
        the answer holds until the run ends (what the lock does not stop, a
        role that controls the schema already, the look counts)."""
        found = privileged_session.standing(_dbapi(context.get_bind()), self.schema)
        privileged_session.refuse_privileged(found, "a migration", hub_required=False)

    def _connector(self, url: str, connect_args: dict[str, Any]) -> Callable[[], Any]:
        """SQLAlchemy's creator: each connection made by libpq from the URL
        as given; first the look at which server session it reached, then the
        search_path pinned, before the run's first look at the hub."""

        def connect() -> psycopg.Connection[Any]:
            conn = privileged_session.connect(url, prepare_threshold=None, **connect_args)
            try:
                self.pinned = session_pinning.pin(conn, url, connect_args)
                privileged_session.pin(conn)
            except BaseException:
                conn.close()
                raise
            return conn

        return connect

    def _lock_wait(self, connection: Connection, error: BaseException, number: int) -> LockWait:
        """The failed attempt, with who holds the table now (the attempt has
        rolled back)."""
        if connection.in_transaction():
            connection.rollback()
        if isinstance(error, table_locks.LockNotTaken):
            table, waited_ms = error.table, error.waited_ms
            found = [h.describe() for h in table_locks.holders(connection, self.schema, table)]
            connection.rollback()
        else:  # a lock a revision waited for later, or the server chose us as a deadlock victim
            table, waited_ms, found = str(getattr(error, "orig", error)).split("\n")[0], 0.0, []
        locks = self.options.locks
        retry = locks.backoff_s(number) if number < locks.attempts else None
        return LockWait(number, table, round(waited_ms, 1), found, retry)

    def _attempt(self, engine: Engine, number: int) -> LockWait | None:
        """One attempt: the revisions still to apply, each in its own
        transaction; the wait that stopped it, or None."""
        with engine.connect() as connection:
            try:
                passes = self.passes(new_hub=not self._holds_a_hub(connection))
                self._refuse_if_privileged(connection)
                for number_of_pass, this_pass in enumerate(passes, start=1):
                    self.configure(this_pass, connection=connection)
                    first, final = number_of_pass == 1, number_of_pass == len(passes)
                    self.run_pass(connection, first=first, final=final)
            except Exception as error:
                if not _is_lock_failure(error):
                    raise
                return self._lock_wait(connection, error, number)
            finally:
                if self.guard.node_gate is not None:
                    self.guard.node_gate.open()  # after a failure; a commit opened it already
                if self.pinned is not None:
                    session_pinning.release(_dbapi(connection), self.pinned)
        return None

    def run_online(self) -> None:
        url = _libpq_url(self._database_url())
        connect_args = {} if "application_name=" in url else {"application_name": APPLICATION_NAME}
        engine = create_engine(
            "postgresql+psycopg://",
            poolclass=pool.NullPool,
            creator=self._connector(url, connect_args),
        )
        # On a hub distributed by Citus the run closes the call gate on its node too.
        self.guard.node_gate = NodeGate(url, self.schema)
        report, locks = self.report, self.options.locks
        started = time.monotonic()
        try:
            for number in range(1, locks.attempts + 1):
                report.attempts = number
                wait = self._attempt(engine, number)
                if wait is None:
                    break
                report.lock_waits.append(wait)
                log.warning("schema %s: %s", self.schema, wait.describe())
                if wait.retry_in_s is not None:
                    time.sleep(wait.retry_in_s)
            else:
                report.duration_s = round(time.monotonic() - started, 3)
                waits = (locks.lock_timeout_ms, locks.timeout_ms(locks.attempts))
                raise MigrationLocksNotTaken(report.failure(*waits))
        finally:
            engine.dispose()
        report.duration_s = round(time.monotonic() - started, 3)
        log.info("%s", report.summary())
