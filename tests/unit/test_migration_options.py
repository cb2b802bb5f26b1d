"""MigrationOptions, the one object every way into a migration run builds
(provider/deploy/migration_options.py): each option checked once, named as
it was given, before anything connects."""

from __future__ import annotations

import pytest
from alembic.config import Config

from provider.deploy import migration_options
from provider.deploy.migration_options import InvalidMigrationOption, MigrationOptions
from provider.deploy.table_locks import LockPolicy
from provider.schema_name import InvalidSchemaName


def test_the_defaults_are_those_the_docs_give() -> None:
    options = MigrationOptions.build()
    assert options == MigrationOptions(schema="public", runtime_ddl="guarded")
    assert options.locks == LockPolicy(lock_timeout_ms=100, attempts=15)
    assert (options.url, options.runtime_role, options.citus) == (None, None, None)


def test_x_arguments_are_strings_and_an_empty_one_is_not_given() -> None:
    options = MigrationOptions.from_x_arguments(
        {
            "schema": "orders",
            "runtime_role": "hub_runtime",
            "runtime_ddl": "none",
            "citus": "",
            "lock_timeout_ms": "250",
            "lock_attempts": "",
        }
    )
    assert options.schema == "orders"
    assert (options.runtime_role, options.runtime_ddl, options.citus) == (
        "hub_runtime",
        "none",
        None,
    )
    assert options.locks == LockPolicy(lock_timeout_ms=250, attempts=15)


@pytest.mark.parametrize(
    ("given", "option", "words"),
    [
        ({"schema": "Orders"}, "schema", "invalid schema name"),
        ({"schema": "pg_orders"}, "schema", "pg_ prefix is reserved"),
        ({"runtime_role": "x'; DROP TABLE y; --"}, "runtime_role", "invalid runtime role"),
        ({"runtime_ddl": "everything"}, "runtime_ddl", "invalid runtime_ddl"),
        ({"citus": "row"}, "citus", "the one mode is citus=schema"),
        ({"lock_timeout_ms": "0"}, "lock_timeout_ms", "expected a positive integer"),
        ({"lock_timeout_ms": "1.5"}, "lock_timeout_ms", "expected a positive integer"),
        ({"lock_attempts": "-3"}, "lock_attempts", "expected a positive integer"),
    ],
)
def test_a_bad_value_is_refused_naming_its_option(
    given: dict[str, str], option: str, words: str
) -> None:
    with pytest.raises(InvalidMigrationOption, match=words) as refused:
        MigrationOptions.from_x_arguments(given)
    assert refused.value.option == option


def test_an_unknown_x_argument_is_refused_not_ignored() -> None:
    """A typo must not deploy with the default lock timeout."""
    with pytest.raises(InvalidMigrationOption, match="unknown option -x lock_timout_ms") as refused:
        MigrationOptions.from_x_arguments({"lock_timout_ms": "50"})
    assert refused.value.option == "lock_timout_ms"
    assert "lock_timeout_ms" in str(refused.value)  # the list of options names the right one


def test_python_values_are_checked_as_the_x_strings_are() -> None:
    with pytest.raises(InvalidMigrationOption, match="lock_attempts=0"):
        MigrationOptions.build(lock_attempts=0)
    assert MigrationOptions.build(lock_attempts=3).locks.attempts == 3


def test_env_reads_the_stored_options_else_the_x_arguments() -> None:
    config = Config()
    from_x = migration_options.of_run(config, {"schema": "orders"})
    assert from_x.schema == "orders"
    assert migration_options.stored(config) is from_x  # the revisions' steps read it there

    stored = MigrationOptions.build(schema="billing")
    config = Config()
    migration_options.store(config, stored)
    assert migration_options.of_run(config, {}) is stored
    with pytest.raises(InvalidMigrationOption, match="not both"):
        migration_options.of_run(config, {"schema": "orders"})


def test_the_database_url_comes_from_the_option_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    given = MigrationOptions.build(url="postgresql://u@h/db")
    assert given.database_url(offline=False) == "postgresql+psycopg://u@h/db"
    monkeypatch.setenv("DATABASE_URL", "postgres://env@h/db")
    assert MigrationOptions().database_url(offline=False) == "postgresql+psycopg://env@h/db"
    assert given.database_url(offline=False) == "postgresql+psycopg://u@h/db"
    monkeypatch.delenv("DATABASE_URL")
    assert MigrationOptions().database_url(offline=False, configured="postgresql://ini@h/d") == (
        "postgresql+psycopg://ini@h/d"
    )
    assert MigrationOptions().database_url(offline=True) == "postgresql+psycopg://"
    with pytest.raises(InvalidMigrationOption, match="no database URL"):
        MigrationOptions().database_url(offline=False)


def test_a_direction_is_told_without_changing_the_options() -> None:
    options = MigrationOptions.build(schema="orders")
    going = options.going("downgrade")
    assert going.direction == "downgrade" and options.direction is None
    assert going.schema == options.schema


def test_a_bad_schema_is_the_invalid_schema_name_callers_catch() -> None:
    with pytest.raises(InvalidSchemaName):
        MigrationOptions.build(schema="Robert'); DROP SCHEMA public CASCADE;--")


def test_later_attempts_wait_longer_for_a_lock_up_to_three_times_the_timeout() -> None:
    """Holders slowed by a loaded machine get to finish; a call queued behind
    the run still waits well under the runtime's 1 s slow-statement mark."""
    policy = LockPolicy(lock_timeout_ms=100)
    waits = [policy.timeout_ms(attempt) for attempt in range(1, policy.attempts + 1)]
    assert waits == [100] * 5 + [200] * 5 + [300] * 5
