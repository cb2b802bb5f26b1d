"""A migration run takes its table locks up front, under a short lock_timeout:
it rolls back and tries again while a table is held, fails in one line naming
the table and its holder when it never gets it, changes nothing then, and
refuses a revision that takes a strong lock it does not declare."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from provider.deploy import migrate, table_locks
from provider.deploy.migration_options import InvalidMigrationOption
from provider.deploy.refusals import (
    MigrationLocksNotTaken,
    MigrationMisused,
    UndeclaredTableLocks,
)
from provider.deploy.version_table import installed_revision as read_revision
from tests.support.alembic_cli import alembic
from tests.support.db import new_schema_name
from tests.support.extra_revision import migrations_with_revision, upgrade_with


def installed_revision(url: str, schema: str) -> str | None:
    with psycopg.connect(url) as conn:
        return read_revision(conn, schema)


@pytest.fixture
def schema_at_0005(database_url: str) -> str:
    schema = new_schema_name("lk")
    migrate.upgrade(database_url, schema, "0005")
    return schema


@pytest.fixture
def holder(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    """A session left idle in its transaction, as a stuck application would be."""
    with psycopg.connect(database_url, application_name="stuck-app") as conn:
        yield conn
        conn.rollback()


def test_a_held_table_fails_the_run_in_one_line_and_changes_nothing(
    database_url: str, schema_at_0005: str, holder: psycopg.Connection[Any]
) -> None:
    holder.execute(f'SELECT count(*) FROM "{schema_at_0005}".history')
    with pytest.raises(MigrationLocksNotTaken) as refused:
        migrate.upgrade(database_url, schema_at_0005, lock_timeout_ms=50, lock_attempts=3)
    message = str(refused.value)
    assert "\n" not in message
    assert "nothing changed: table history could not be locked within 50 ms in 3 attempts" in (
        message
    )
    assert "stuck-app" in message and "idle in transaction" in message
    holder.rollback()
    assert installed_revision(database_url, schema_at_0005) == "0005"


def test_the_alembic_command_prints_a_refusal_as_one_line(
    database_url: str, schema_at_0005: str, holder: psycopg.Connection[Any]
) -> None:
    """The runner hands the alembic command line a CommandError: its one
    error line, no traceback."""
    holder.execute(f'SELECT count(*) FROM "{schema_at_0005}".history')
    options = (
        "-x",
        f"schema={schema_at_0005}",
        "-x",
        "lock_timeout_ms=50",
        "-x",
        "lock_attempts=2",
    )
    run = alembic(*options, "upgrade", "head", url=database_url)
    assert run.returncode == 255  # Alembic's exit for a CommandError
    failed = [line for line in run.stderr.splitlines() if "[alembic.util.messaging]" in line]
    assert len(failed) == 1 and "could not be locked within 50 ms" in failed[0], run.stderr
    assert "Traceback" not in run.stderr
    holder.rollback()
    assert installed_revision(database_url, schema_at_0005) == "0005"


def test_an_unknown_revision_is_the_deploy_layers_own_error(
    database_url: str, schema_at_0005: str
) -> None:
    with pytest.raises(MigrationMisused, match="Can't locate revision identified by '9999'"):
        migrate.upgrade(database_url, schema_at_0005, "9999")
    assert installed_revision(database_url, schema_at_0005) == "0005"


def test_a_table_only_a_later_revision_needs_stops_the_run_before_anything_commits(
    database_url: str, schema_at_0005: str, holder: psycopg.Connection[Any]
) -> None:
    """0007 alters taskhub_settings; the run's first revision (0006) locks it
    already, so the upgrade stops at 0005 instead of half-way."""
    holder.execute(f'SELECT count(*) FROM "{schema_at_0005}".taskhub_settings')
    with pytest.raises(MigrationLocksNotTaken, match="nothing changed: table taskhub_settings"):
        migrate.upgrade(database_url, schema_at_0005, lock_timeout_ms=50, lock_attempts=2)
    holder.rollback()
    assert installed_revision(database_url, schema_at_0005) == "0005"


class _ReleaseOnLockWait(logging.Handler):
    def __init__(self, holder: psycopg.Connection[Any]) -> None:
        super().__init__(logging.WARNING)
        self.holder = holder

    def emit(self, record: logging.LogRecord) -> None:
        if "not locked within" in record.getMessage():
            self.holder.rollback()


@contextlib.contextmanager
def released_at_the_first_lock_wait(holder: psycopg.Connection[Any]) -> Iterator[None]:
    """`holder` rolls back (letting its locks go) when the run logs a lock wait."""
    handler, logger = _ReleaseOnLockWait(holder), logging.getLogger("taskhub_pg.migrate")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def test_a_table_held_for_a_moment_costs_a_retry_not_the_deploy(
    database_url: str, schema_at_0005: str, holder: psycopg.Connection[Any]
) -> None:
    holder.execute(f'SELECT count(*) FROM "{schema_at_0005}".worker_queue')
    # The holder lets go once the run has met it (its lock wait is logged
    # before the retry), however long the run took to get there.
    with released_at_the_first_lock_wait(holder):
        run = migrate.upgrade(database_url, schema_at_0005, lock_timeout_ms=50)
    assert run.attempts >= 2
    assert run.lock_waits and all(w.table == "worker_queue" for w in run.lock_waits)
    assert any("stuck-app" in h for w in run.lock_waits for h in w.holders)
    assert run.to_revision == migrate.head_revision()
    assert run.locked_tables == [
        "orchestrator_queue",
        "instance_locks",  # 0021's autovacuum settings
        "instances",  # 0016's index
        "history",
        "worker_queue",
        "taskhub_settings",  # 0007's policy check, 0023's threshold check
        "taskhub_operator_privileges",  # 0023's SELECT rows
        "taskhub_schedules",  # 0029's failure columns
    ]
    assert run.locks_held_ms is not None


def test_a_run_that_locks_nothing_waits_on_nobody(
    database_url: str, holder: psycopg.Connection[Any]
) -> None:
    schema = new_schema_name("lk")
    migrate.upgrade(database_url, schema, "0007")
    holder.execute(f'SELECT count(*) FROM "{schema}".history')
    run = migrate.upgrade(database_url, schema, "0008", lock_timeout_ms=50, lock_attempts=1)
    assert run.steps == ["0007 -> 0008"] and run.locked_tables == [] and not run.lock_waits


def test_the_tables_are_locked_in_the_hot_paths_order() -> None:
    assert table_locks.in_lock_order(["zz_new", "worker_queue", "history", "instances"]) == [
        "instances",
        "history",
        "worker_queue",
        "zz_new",
    ]


def test_a_revision_locking_a_table_it_does_not_declare_is_refused(
    database_url: str, tmp_path: Path
) -> None:
    schema = new_schema_name("lk")
    migrate.upgrade(database_url, schema)
    location = migrations_with_revision(
        tmp_path, f'ALTER TABLE "{schema}".history ALTER COLUMN event_data SET STORAGE EXTENDED'
    )
    with pytest.raises(UndeclaredTableLocks, match="strong locks on history"):
        upgrade_with(location, database_url, schema)
    assert installed_revision(database_url, schema) == migrate.head_revision()
    # Declared, the same revision runs.
    declared = migrations_with_revision(
        tmp_path / "declared",
        f'ALTER TABLE "{schema}".history ALTER COLUMN event_data SET STORAGE EXTENDED',
        locks=["history"],
    )
    assert upgrade_with(declared, database_url, schema).locked_tables == ["history"]


def test_the_offline_script_locks_each_revision_up_front_under_the_lock_timeout() -> None:
    import io

    script = io.StringIO()
    migrate.offline_script("orders", "0005:0007", script)
    text = script.getvalue()
    assert "SET lock_timeout = 100" in text
    running = text.index("-- Running upgrade 0005 -> 0006")
    gate = text.index(
        "SELECT pg_advisory_xact_lock(hashtextextended('taskhub:\"orders\":calls', 0))"
    )
    lock = text.index('LOCK TABLE "orders".orchestrator_queue IN ACCESS EXCLUSIVE MODE')
    assert running < gate < lock < text.index("ALTER TABLE", running)
    assert text.index('"orders".history IN') < text.index('"orders".worker_queue IN')


def test_bad_lock_options_are_refused(database_url: str) -> None:
    with pytest.raises(InvalidMigrationOption, match="lock_timeout_ms"):
        migrate.upgrade(database_url, new_schema_name("lk"), lock_timeout_ms=0)
