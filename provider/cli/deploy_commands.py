"""upgrade, downgrade, sql, status: deploying; check and repair: the drift check.

Alembic and SQLAlchemy load inside these verbs only (`from provider.deploy
import migrate` where a verb runs): every other verb, and --help, starts
without them."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import psycopg
import typer

from provider.cli.failures import database_failure, report
from provider.cli.hubs import no_hub, require_hub, the_servers_own_errors, too_privileged
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
from provider.cli.plain import plain, visible, visible_lines
from provider.cli.turn_form_command import downgrade_warning
from provider.client.on_connection import OnConnection
from provider.deploy import privileged_session
from provider.deploy.migration_options import InvalidMigrationOption, MigrationOptions
from provider.deploy.privileged_session import PINNED_SEARCH_PATH
from provider.deploy.refusals import MigrationMisused, MigrationRefused
from provider.deploy.run_report import MigrationRun
from provider.deploy.run_report import log as migration_log
from provider.deploy.session_pinning import one_transaction_behind_a_pooler
from provider.operations.hub_status import HubStatus, read_hub_status, schema_exists
from provider.types import FlowRule

if TYPE_CHECKING:
    from provider.operations.drift_check import Problem


class RuntimeDdl(StrEnum):
    """The choices of --runtime-ddl: runtime_role.RUNTIME_DDL_MODES."""

    guarded = "guarded"
    none = "none"


class Citus(StrEnum):
    """The choices of --citus: migration_options.CITUS_MODES."""

    schema = "schema"


RuntimeRole = Annotated[
    str | None,
    typer.Option(help="grant this role exactly what the runtime needs (see docs/ops.md)"),
]
RuntimeDdlOption = Annotated[
    RuntimeDdl,
    typer.Option(
        help="guarded: CREATE for the duroxide runtime's connect, real DDL refused;"
        " none: no CREATE (enough for the taskhub provider)"
    ),
]


def _options(**given: Any) -> MigrationOptions:
    """The run's options, validated before anything connects: a bad one is
    exit 2, named as its flag."""
    try:
        return MigrationOptions.build(**given)
    except InvalidMigrationOption as error:
        fail(USAGE, f"--{error.option.replace('_', '-')}: {error}")


LockTimeoutMs = Annotated[
    int | None,
    typer.Option(
        min=1, help="wait at most this long for each table lock (default 100; later attempts 3x)"
    ),
]
LockAttempts = Annotated[
    int | None,
    typer.Option(min=1, help="roll back and try again this many times in all (default 15)"),
]


class _LockWaitLines(logging.Handler):
    """Each lock wait of the run, on stderr as it happens (a pipeline's log);
    under --json a JSON object each, as an error would be."""

    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self.as_json = as_json

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.WARNING:
            return
        message = record.getMessage()
        if self.as_json:
            sys.stderr.write(json.dumps({"warning": message}) + "\n")
        else:
            errors.print(plain(f"taskhub-pg: {message}"), highlight=False)


@contextmanager
def _reporting_lock_waits(as_json: bool) -> Iterator[None]:
    handler = _LockWaitLines(as_json)
    migration_log.addHandler(handler)
    try:
        yield
    finally:
        migration_log.removeHandler(handler)


STATUS_HINT = "taskhub-pg status shows the revision installed now"


def _migrate(run: Callable[[], MigrationRun], as_json: bool) -> None:
    """Run a migration and say what it did; a failure is one line, not a traceback."""
    try:
        with _reporting_lock_waits(as_json):
            done = run()
    except MigrationRefused as error:
        fail(PROBLEMS, str(error))  # each says what was rolled back
    except MigrationMisused as error:  # an unknown revision, say
        fail(USAGE, f"nothing changed: {error}")
    except psycopg.Error as error:
        # Revisions from 0006 on commit one by one: only the one under way
        # is certain to have rolled back.
        outcome = "the revision under way (if any) rolled back"
        failure = database_failure(error, outcome=outcome)
        if failure.code == PROBLEMS:
            failure.hint = "; ".join(filter(None, [failure.hint, STATUS_HINT]))
        raise failure from None
    if as_json:
        print_json(done.as_json())
    else:
        print(visible_lines(done.summary()))


def print_problems(problems: list[Problem], empty: str) -> None:
    """One line per problem, for CI logs and grep: kind, object, detail."""
    if not problems:
        print(f"  {empty}")
    for problem in problems:
        print(visible(f"  {problem.kind:<17} {problem.object}: {problem.detail}"))


def _status_note(conn: psycopg.Connection[Any], schema: str) -> str | None:
    """Why a schema holds no hub, and where the hubs are; exit 3 when the
    schema does not exist at all (an empty schema is "not migrated")."""
    missing = no_hub(conn, schema)
    if missing is not None and not schema_exists(conn, schema):
        raise missing
    return None if missing is None else "; ".join(filter(None, [missing.message, missing.hint]))


def _status_json(found: HubStatus, head: str, note: str | None) -> dict[str, Any]:
    roles = found.runtime_roles
    shielded = found.shielded_failures
    return {
        "schema": found.schema,
        "current": found.revision,
        "head": head,
        "pending": found.revision != head,
        "queues": [
            {
                "queue": queue.queue,
                "ready": queue.ready,
                "scheduled": queue.scheduled,
                "leased": queue.leased,
                "max_attempt_count": queue.max_attempt_count,
                "dead_letters": queue.dead_letters,
            }
            for queue in found.queues
        ],
        "runtime_roles": None
        if roles is None
        else [{"role": name, "runtime_ddl": mode} for name, mode in roles],
        "shielded_failures": None if shielded is None else asdict(shielded),
        "flow_rules": [asdict(rule) for rule in found.flow_rules],
        "note": note,
    }


def _print_status(found: HubStatus, head: str, note: str | None) -> None:
    print(f"schema:   {found.schema}")
    print(f"current:  {found.revision or 'not migrated'}")
    print(f"head:     {head}")
    print("pending:  " + ("none" if found.revision == head else f"upgrade to {head}"))
    if note:
        print(visible(f"note:     {note}"))
    if found.queues:
        print("queues:")
    for q in found.queues:
        print(
            f"  {q.queue:<13} ready {q.ready}, scheduled {q.scheduled}, leased {q.leased},"
            f" max attempts {q.max_attempt_count}, dead letters {q.dead_letters}"
        )
    if found.runtime_roles is not None:
        described = ", ".join(f"{n} (runtime_ddl {m})" for n, m in found.runtime_roles)
        print(visible(f"runtime roles: {described or 'none'}"))
    if (shielded := found.shielded_failures) is not None:
        print(
            f"transient failures given back: {shielded.last_day} in the last day,"
            f" {shielded.total} in all (transient_failure_policy {shielded.policy})"
        )
    if found.flow_rules:
        print("flow rules (taskhub-pg limit list):")
    for rule in found.flow_rules:
        print(visible(f"  {rule.kind} {rule.name}: {_rule_text(rule)}"))


def _rule_text(rule: FlowRule) -> str:
    parts = ["PAUSED"] if rule.paused else []
    if rule.max_running is not None:
        turns = f" (and {rule.turns} turns)" if rule.turns else ""
        parts.append(f"{rule.running} of at most {rule.max_running} running{turns}")
    if rule.per_second is not None:
        parts.append(f"at most {rule.per_second:g}/s (burst {rule.burst})")
    return ", ".join(parts)


def _explain_not_migrated(target: str, schema: str, as_json: bool) -> None:
    """check and repair report an unmigrated schema as their problem (exit 1);
    this line says where the hubs are, for a forgotten --schema."""
    with privileged_session.connect(target, autocommit=True, prepare_threshold=None) as conn:
        missing = no_hub(conn, schema, code=PROBLEMS)
    if missing is not None:
        report(missing, as_json)


def register(app: typer.Typer) -> None:
    @app.command()
    def upgrade(
        url: Url = None,
        schema: Schema = "public",
        revision: str = "head",
        runtime_role: RuntimeRole = None,
        runtime_ddl: RuntimeDdlOption = RuntimeDdl.guarded,
        citus: Annotated[
            Citus | None,
            typer.Option(help="schema: distribute the hub on this Citus cluster (scale-out.md)"),
        ] = None,
        lock_timeout_ms: LockTimeoutMs = None,
        lock_attempts: LockAttempts = None,
        as_json: AsJson = False,
    ) -> None:
        """Migrate the schema (Alembic), optionally granting a runtime role.
        Prints the revisions applied, the time taken, lock waits and retries."""
        options = _options(
            url=database_url(url),
            schema=schema,
            runtime_role=runtime_role,
            runtime_ddl=runtime_ddl.value,
            citus=None if citus is None else citus.value,
            lock_timeout_ms=lock_timeout_ms,
            lock_attempts=lock_attempts,
        )
        from provider.deploy import migrate

        _migrate(lambda: migrate.run(options, "upgrade", revision), as_json)

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
        # Before asking: exit 3 if there is none to downgrade, exit 1 in a
        # session that can do more than the hub's owner (the owner migrates).
        require_hub(target, schema)
        removes = " This removes the task hub and every row in it." if revision == "base" else ""
        removes += downgrade_warning(target, schema, revision)
        options = _options(
            url=target, schema=schema, lock_timeout_ms=lock_timeout_ms, lock_attempts=lock_attempts
        )
        confirm(f"Downgrade schema {schema} to revision {revision}?{removes}", yes)
        from provider.deploy import migrate

        _migrate(lambda: migrate.run(options, "downgrade", revision), as_json)

    @app.command("sql")
    def offline_sql(
        schema: Schema = "public",
        revision: str = "head",
        runtime_role: RuntimeRole = None,
        runtime_ddl: RuntimeDdlOption = RuntimeDdl.guarded,
    ) -> None:
        """Print the migration as one SQL script, for psql (no database needed)."""
        options = _options(schema=schema, runtime_role=runtime_role, runtime_ddl=runtime_ddl.value)
        from provider.deploy import migrate

        try:
            migrate.write_script(options, revision)
        except MigrationMisused as error:  # an unknown revision, say
            fail(USAGE, f"nothing changed: {error}")

    @app.command()
    def status(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
        """Revision, queues, runtime roles and transient failures of a hub.

        A schema that exists but holds no hub is "not migrated" (exit 0, with
        a note naming the hubs); one that does not exist is exit 3."""
        target = database_url(url)
        with (
            privileged_session.connect(target, autocommit=True, prepare_threshold=None) as conn,
            one_transaction_behind_a_pooler(conn, [PINNED_SEARCH_PATH]),
        ):
            refused = too_privileged(conn, schema)  # it reads the hub's views
            if refused is not None:
                raise refused
            note = _status_note(conn, schema)
            hub = OnConnection(conn, schema)
            with the_servers_own_errors():
                found = read_hub_status(
                    conn,
                    schema,
                    lambda: hub.run(hub.plans.queue_health()),
                    lambda: hub.run(hub.plans.flow_rules()),
                )
        from provider.deploy import migrate

        head = migrate.head_revision()
        if as_json:
            print_json(_status_json(found, head, note))
        else:
            _print_status(found, head, note)

    @app.command()
    def check(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
        """Exit 1 and name each problem when the schema drifted from its
        revision: pending revisions, changed or missing procedures and views,
        SECURITY DEFINER or search_path changed, runtime grants missing,
        _duroxide_migrations versions missing, settings out of range. Names
        the duroxide releases the ledger admits (information: exit unchanged)."""
        target = database_url(url)
        from provider.operations import drift_check

        with privileged_session.one_session(target) as conn:
            found = drift_check.check(conn, schema)
        if as_json:
            print_json(found.as_json())
        else:
            if found.catalogue_only:
                print(f"schema {schema}: the code of its functions (head {found.head})")
            else:
                print(f"schema {schema}: revision {found.revision or 'none'} (head {found.head})")
            print_problems(found.problems, empty="no drift")
            if found.runtimes is not None:  # information: not drift, no warning
                print(visible(f"runtimes: {found.runtimes.line()}"))  # it names roles
            for warning in found.warnings:
                errors.print(plain(f"warning: {warning}"), highlight=False)
        if found.revision is None and not found.catalogue_only:
            _explain_not_migrated(target, schema, as_json)
        raise typer.Exit(OK if found.ok else PROBLEMS)

    @app.command()
    def repair(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
        """Re-apply the installed revision's procedures, views, grants and
        _duroxide_migrations versions, in one transaction; rows stay as they
        are. Exit 1 when something is left (pending revisions, settings)."""
        target = database_url(url)
        from provider.operations import drift_check

        with privileged_session.one_session(target) as conn:
            done = drift_check.repair(conn, schema)
        if as_json:
            print_json(done.as_json())
        else:
            print("repaired:")
            print_problems(done.repaired, empty="nothing")
            print("left as it is:")
            print_problems(done.remaining, empty="nothing")
        if any(problem.kind == "not_migrated" for problem in done.remaining):
            _explain_not_migrated(target, schema, as_json)
        raise typer.Exit(OK if not done.remaining else PROBLEMS)
