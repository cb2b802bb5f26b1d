"""upgrade, downgrade, sql, status: deploying; check and repair: the deploy gate."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from alembic.util import CommandError

from provider.cli.options import (
    OK,
    PROBLEMS,
    USAGE,
    AsJson,
    Schema,
    Url,
    Yes,
    confirm,
    database_url,
    errors,
    fail,
    print_json,
)
from provider.client.deploy_gate import Problem
from provider.client.hub_status import read_hub_status
from provider.deploy import gate, migrate
from provider.deploy.run_report import (
    MigrationLocksNotTaken,
    MigrationRun,
    RuntimeSignaturesChanged,
    UndeclaredTableLocks,
)
from provider.deploy.run_report import log as migration_log
from provider.deploy.runtime_role import RUNTIME_DDL_MODES, InvalidRuntimeRole, validate_role_name
from provider.deploy.table_locks import InvalidLockOption

RuntimeRole = Annotated[
    str | None,
    typer.Option(help="grant this role exactly what the runtime needs (see docs/ops.md)"),
]
RuntimeDdl = Annotated[
    str,
    typer.Option(
        help="guarded: CREATE for the duroxide runtime's connect, real DDL refused;"
        " none: no CREATE (enough for the taskhub provider)"
    ),
]


def _runtime_role(role: str | None, mode: str) -> str | None:
    if mode not in RUNTIME_DDL_MODES:
        fail(2, f"--runtime-ddl must be one of {', '.join(RUNTIME_DDL_MODES)}")
    if role:
        try:
            validate_role_name(role)
        except InvalidRuntimeRole as error:
            fail(2, str(error))
    return role


LockTimeoutMs = Annotated[
    int | None,
    typer.Option(min=1, help="wait at most this long for each table lock (default 100)"),
]
LockAttempts = Annotated[
    int | None,
    typer.Option(min=1, help="roll back and try again this many times in all (default 10)"),
]


class _LockWaitLines(logging.Handler):
    """Each lock wait of the run, on stderr as it happens (a pipeline's log)."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            errors.print(f"taskhub-pg: {record.getMessage()}", highlight=False)


@contextmanager
def _reporting_lock_waits() -> Iterator[None]:
    handler = _LockWaitLines()
    migration_log.addHandler(handler)
    try:
        yield
    finally:
        migration_log.removeHandler(handler)


def _migrate(run: Callable[[], MigrationRun], as_json: bool) -> None:
    """Run a migration and say what it did; a failure is one line, not a traceback."""
    try:
        with _reporting_lock_waits():
            report = run()
    except (MigrationLocksNotTaken, RuntimeSignaturesChanged, UndeclaredTableLocks) as error:
        fail(PROBLEMS, str(error))  # each says what was rolled back
    except (CommandError, InvalidLockOption) as error:  # an unknown revision, say
        fail(USAGE, f"nothing changed: {error}")
    if as_json:
        print_json(report.as_json())
    else:
        print(report.summary())


def print_problems(problems: list[Problem], empty: str) -> None:
    """One line per problem, for CI logs and grep: kind, object, detail."""
    if not problems:
        print(f"  {empty}")
    for problem in problems:
        print(f"  {problem.kind:<17} {problem.object}: {problem.detail}")


def register(app: typer.Typer) -> None:
    @app.command()
    def upgrade(
        url: Url = None,
        schema: Schema = "public",
        revision: str = "head",
        runtime_role: RuntimeRole = None,
        runtime_ddl: RuntimeDdl = "guarded",
        citus: Annotated[
            str | None,
            typer.Option(help="schema: distribute the hub on this Citus cluster (scale-out.md)"),
        ] = None,
        lock_timeout_ms: LockTimeoutMs = None,
        lock_attempts: LockAttempts = None,
        as_json: AsJson = False,
    ) -> None:
        """Migrate the schema (Alembic), optionally granting a runtime role.
        Prints the revisions applied, the time taken, lock waits and retries."""
        role = _runtime_role(runtime_role, runtime_ddl)
        if citus is not None and citus not in migrate.CITUS_MODES:
            fail(2, f"--citus must be one of {', '.join(migrate.CITUS_MODES)}")
        target = database_url(url)
        _migrate(
            lambda: migrate.upgrade(
                target,
                schema,
                revision,
                runtime_role=role,
                runtime_ddl=runtime_ddl,
                citus=citus,
                lock_timeout_ms=lock_timeout_ms,
                lock_attempts=lock_attempts,
            ),
            as_json,
        )

    @app.command()
    def downgrade(
        revision: Annotated[str, typer.Option(help="the revision to go back to")],
        url: Url = None,
        schema: Schema = "public",
        lock_timeout_ms: LockTimeoutMs = None,
        lock_attempts: LockAttempts = None,
        as_json: AsJson = False,
        yes: Yes = False,
    ) -> None:
        """Migrate back to REVISION (base: remove the task hub and its data).
        Asks first unless --yes; without a terminal it refuses (exit 5)."""
        target = database_url(url)
        removes = " This removes the task hub and every row in it." if revision == "base" else ""
        confirm(f"Downgrade schema {schema} to revision {revision}?{removes}", yes)
        _migrate(
            lambda: migrate.downgrade(
                target,
                schema,
                revision,
                lock_timeout_ms=lock_timeout_ms,
                lock_attempts=lock_attempts,
            ),
            as_json,
        )

    @app.command("sql")
    def offline_sql(
        schema: Schema = "public",
        revision: str = "head",
        runtime_role: RuntimeRole = None,
        runtime_ddl: RuntimeDdl = "guarded",
    ) -> None:
        """Print the migration as one SQL script, for psql (no database needed)."""
        role = _runtime_role(runtime_role, runtime_ddl)
        migrate.offline_script(schema, revision, runtime_role=role, runtime_ddl=runtime_ddl)

    @app.command()
    def status(url: Url = None, schema: Schema = "public") -> None:
        """Revision, queues, runtime roles and transient failures of a hub."""
        found = read_hub_status(database_url(url), schema)
        head = migrate.head_revision()
        print(f"schema:   {schema}")
        print(f"current:  {found.revision or 'not migrated'}")
        print(f"head:     {head}")
        print("pending:  " + ("none" if found.revision == head else f"upgrade to {head}"))
        if found.queues:
            print("queues:")
        for q in found.queues:
            print(
                f"  {q.queue:<13} ready {q.ready}, scheduled {q.scheduled}, leased {q.leased},"
                f" max attempts {q.max_attempt_count}, dead letters {q.dead_letters}"
            )
        if found.runtime_roles is not None:
            described = ", ".join(f"{n} (runtime_ddl {m})" for n, m in found.runtime_roles)
            print(f"runtime roles: {described or 'none'}")
        if (shielded := found.shielded_failures) is not None:
            print(
                f"transient failures given back: {shielded.last_day} in the last day,"
                f" {shielded.total} in all (transient_failure_policy {shielded.policy})"
            )

    @app.command()
    def check(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
        """Exit 1 and name each problem when the schema drifted from its
        revision: pending revisions, changed or missing procedures and views,
        SECURITY DEFINER or search_path changed, runtime grants missing,
        _duroxide_migrations versions missing, settings out of range."""
        report = gate.check(database_url(url), schema)
        if as_json:
            print_json(report.as_json())
        else:
            print(f"schema {schema}: revision {report.revision or 'none'} (head {report.head})")
            print_problems(report.problems, empty="no drift")
        raise typer.Exit(OK if report.ok else PROBLEMS)

    @app.command()
    def repair(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
        """Re-apply the installed revision's procedures, views, grants and
        _duroxide_migrations versions, in one transaction; rows stay as they
        are. Exit 1 when something is left (pending revisions, settings)."""
        report = gate.repair(database_url(url), schema)
        if as_json:
            print_json(report.as_json())
        else:
            print("repaired:")
            print_problems(report.repaired, empty="nothing")
            print("left as it is:")
            print_problems(report.remaining, empty="nothing")
        raise typer.Exit(OK if not report.remaining else PROBLEMS)
