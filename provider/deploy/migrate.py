"""Run the Alembic migrations from Python: tests, `make run`, deploy jobs and
`python -m provider`. Works from the repository and from an installed wheel."""

from __future__ import annotations

import sys
from typing import TextIO

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from provider.deploy.resources import migrations_dir
from provider.deploy.run_report import MigrationRun
from provider.schema_name import validate_schema_name


def alembic_config(url: str | None, schema: str, output: TextIO | None = None) -> Config:
    config = Config(output_buffer=output or sys.stdout)
    config.set_main_option("script_location", str(migrations_dir()))
    if url:
        config.attributes["url"] = url
    config.attributes["schema"] = validate_schema_name(schema)
    return config


def _with_runtime_role(config: Config, runtime_role: str | None, runtime_ddl: str) -> Config:
    if runtime_role:
        config.attributes["runtime_role"] = runtime_role
        config.attributes["runtime_ddl"] = runtime_ddl
    return config


CITUS_MODES = ("schema",)


def _run(
    config: Config,
    lock_timeout_ms: int | None,
    lock_attempts: int | None,
) -> MigrationRun:
    """The report migrations/env.py fills in, and the lock options it reads."""
    if lock_timeout_ms is not None:
        config.attributes["lock_timeout_ms"] = lock_timeout_ms
    if lock_attempts is not None:
        config.attributes["lock_attempts"] = lock_attempts
    run = MigrationRun(config.attributes["schema"])
    config.attributes["run_report"] = run
    return run


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
    (see sql/0005_least_privilege/runtime_roles.sql); with citus="schema",
    distribute the hub on the Citus cluster the URL's coordinator runs
    (docs/scale-out.md).

    The run locks its revisions' tables up front, waiting at most
    lock_timeout_ms (default 100) for each, and tries lock_attempts times
    (default 10) before it raises MigrationLocksNotTaken, having changed
    nothing. Returns what it did."""
    config = _with_runtime_role(alembic_config(url, schema), runtime_role, runtime_ddl)
    if citus:
        config.attributes["citus"] = citus
    run = _run(config, lock_timeout_ms, lock_attempts)
    config.attributes["direction"] = "upgrade"
    command.upgrade(config, revision)
    return run


def downgrade(
    url: str,
    schema: str = "public",
    revision: str = "base",
    *,
    lock_timeout_ms: int | None = None,
    lock_attempts: int | None = None,
) -> MigrationRun:
    """Migrate back to `revision` (base: remove the hub), locking as upgrade does."""
    config = alembic_config(url, schema)
    run = _run(config, lock_timeout_ms, lock_attempts)
    config.attributes["direction"] = "downgrade"
    command.downgrade(config, revision)
    return run


def offline_script(
    schema: str,
    revision: str = "head",
    output: TextIO | None = None,
    *,
    runtime_role: str | None = None,
    runtime_ddl: str = "guarded",
) -> None:
    """Write the SQL script of `upgrade` (for a DBA to apply with psql)."""
    config = _with_runtime_role(alembic_config(None, schema, output), runtime_role, runtime_ddl)
    config.attributes["direction"] = "upgrade"
    command.upgrade(config, revision, sql=True)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config(None, "public")).get_current_head()
    assert head is not None
    return head
