"""Fixtures of the ported provider validation suite.

`provider` is a TaskHub on a fresh schema migrated by our Alembic revisions
(the suite's `create_provider()`); `provider_factory` makes more, each on its
own fresh schema. `corrupt_history` and `max_attempt_count` are the suite's
`corrupt_instance_history` and `get_max_attempt_count`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from provider import TaskHub, migrate
from tests.conftest import new_schema_name

ProviderFactory = Callable[[], TaskHub]


@pytest.fixture
def provider_factory(database_url: str, make_hub: Callable[..., TaskHub]) -> ProviderFactory:
    def create() -> TaskHub:
        schema = new_schema_name("val")
        migrate.upgrade(database_url, schema)
        return make_hub(schema, statement_timeout_ms=10_000)

    return create


@pytest.fixture
def provider(provider_factory: ProviderFactory) -> TaskHub:
    return provider_factory()


@pytest.fixture
def corrupt_history(database_url: str) -> Callable[[TaskHub, str], None]:
    def corrupt(hub: TaskHub, instance: str) -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                f'UPDATE "{hub.config.schema}".history SET event_data = %s WHERE instance_id = %s',
                ["NOT_VALID_JSON{{{", instance],
            )

    return corrupt


@pytest.fixture
def max_attempt_count(database_url: str) -> Callable[[TaskHub, str], int]:
    def read(hub: TaskHub, instance: str) -> int:
        with psycopg.connect(database_url, autocommit=True) as conn:
            row: Any = conn.execute(
                "SELECT coalesce(max(attempt_count), 0)"
                f' FROM "{hub.config.schema}".orchestrator_queue WHERE instance_id = %s',
                [instance],
            ).fetchone()
            return int(row[0])

    return read
