"""Run the Alembic migrations from Python: tests, `make run`, deploy jobs and
`python -m provider`. Works from the repository and from an installed wheel.

What does not finish raises the deploy layer's own errors
(provider/deploy/refusals.py) or the server's psycopg error, never Alembic's
or SQLAlchemy's: a caller needs neither to read it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

import psycopg
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from psycopg import sql
from sqlalchemy import exc

from provider.deploy import migration_options, privileged_session
from provider.deploy.migration_options import Direction, InvalidMigrationOption, MigrationOptions
from provider.deploy.refusals import MigrationMisused, MigrationRefused
from provider.deploy.run_report import MigrationRun
from provider.resources import migrations_dir
from provider.schema_name import validate_schema_name


def alembic_config(options: MigrationOptions, output: TextIO | None = None) -> Config:
    """An Alembic Config of our migrations, carrying `options` to env.py."""
    config = Config(output_buffer=output or sys.stdout)
    config.set_main_option("script_location", str(migrations_dir()))
    migration_options.store(config, options)
    return config


@contextmanager
def _translated() -> Iterator[None]:
    """Alembic's and SQLAlchemy's errors as the deploy layer's own."""
    try:
        yield
    except MigrationRefused:
        raise
    except CommandError as error:  # an unknown revision, say
        raise MigrationMisused(str(error)) from error
    except exc.DBAPIError as error:
        if isinstance(error.orig, psycopg.Error):
            raise error.orig from None  # the server's own error, SQLSTATE and all
        raise MigrationRefused(f"nothing changed: {error}") from error
    except exc.ArgumentError as error:  # a URL SQLAlchemy cannot read
        raise InvalidMigrationOption("url", str(error)) from error
    except exc.SQLAlchemyError as error:
        raise MigrationRefused(f"nothing changed: {error}") from error


def run(options: MigrationOptions, direction: Direction, revision: str) -> MigrationRun:
    """Migrate `options.schema` to `revision`, up or down. Returns what the
    run did (provider/deploy/runner.py fills it in)."""
    config = alembic_config(options.going(direction))
    report = MigrationRun(options.schema)
    config.attributes["run_report"] = report
    with _translated():
        if direction == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)
    return report


def write_script(options: MigrationOptions, revision: str, output: TextIO | None = None) -> None:
    """Write the SQL script of an upgrade to `revision` (for a DBA to apply with psql)."""
    with _translated():
        command.upgrade(alembic_config(options.going("upgrade"), output), revision, sql=True)


def upgrade(
    url: str,
    schema: str = "public",
    revision: str = "head",
    *,
    runtime_role: str | None = None,
    runtime_ddl: str = "guarded",
    citus: str | None = None,
    lock_timeout_ms: int | None = None,
    lock_attempts: int | None = None,
) -> MigrationRun:
    """Migrate; with runtime_role, also grant that role what a runtime needs
    (sql/head/privileges/taskhub_grant_runtime_role.sql); with citus="schema",
    distribute the hub on the Citus cluster the URL's coordinator runs
    (docs/scale-out.md).

    The run locks its revisions' tables up front, waiting at most
    lock_timeout_ms (default 100; up to three times that on later attempts)
    for each, and tries lock_attempts times (default 15) before it raises
    MigrationLocksNotTaken, having changed nothing. Returns what it did. A
    bad option raises InvalidMigrationOption before anything connects."""
    options = MigrationOptions.build(
        url=url,
        schema=schema,
        runtime_role=runtime_role,
        runtime_ddl=runtime_ddl,
        citus=citus,
        lock_timeout_ms=lock_timeout_ms,
        lock_attempts=lock_attempts,
    )
    return run(options, "upgrade", revision)


def downgrade(
    url: str,
    schema: str = "public",
    revision: str = "base",
    *,
    lock_timeout_ms: int | None = None,
    lock_attempts: int | None = None,
) -> MigrationRun:
    """Migrate back to `revision` (base: remove the hub), locking as upgrade does."""
    options = MigrationOptions.build(
        url=url, schema=schema, lock_timeout_ms=lock_timeout_ms, lock_attempts=lock_attempts
    )
    return run(options, "downgrade", revision)


def drop_hub(url: str, schema: str) -> None:
    """Drop a throwaway hub's schema with everything in it (the test kit's
    teardown): no downgrade runs, and nothing of it is left to report."""
    validate_schema_name(schema)
    with privileged_session.connect(url, autocommit=True, prepare_threshold=None) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def offline_script(
    schema: str,
    revision: str = "head",
    output: TextIO | None = None,
    *,
    runtime_role: str | None = None,
    runtime_ddl: str = "guarded",
) -> None:
    """Write the SQL script of `upgrade` (for a DBA to apply with psql)."""
    options = MigrationOptions.build(
        schema=schema, runtime_role=runtime_role, runtime_ddl=runtime_ddl
    )
    write_script(options, revision, output)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config(MigrationOptions())).get_current_head()
    assert head is not None
    return head
