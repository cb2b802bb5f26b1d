"""Fixtures of the ported provider validation suite.

`provider` is a TaskHub on a fresh schema as our Alembic revisions make it
(the suite's `create_provider()`); `provider_factory` makes more, each on its
own fresh schema. The providers log in as a least-privilege runtime role, as
a production deployment would: the whole suite runs on nothing but what
`runtime_role` grants. `corrupt_history` and `max_attempt_count` are the suite's
`corrupt_instance_history` and `get_max_attempt_count`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.roles import LoginRole
from provider import TaskHub
from tests.support.db import new_schema_name
from tests.support.planted_rows import stores_history_as_json
from tests.support.templates import SchemaTemplates

ProviderFactory = Callable[[], TaskHub]


@pytest.fixture
def provider_factory(
    schema_templates: SchemaTemplates, make_hub: Callable[..., TaskHub], runtime_login: LoginRole
) -> ProviderFactory:
    def create() -> TaskHub:
        # runtime_ddl=none: the taskhub provider needs no CREATE (only the
        # duroxide runtime's connect does), so no DDL guard is installed.
        schema = schema_templates.create(
            new_schema_name("val"), runtime_role=runtime_login.name, runtime_ddl="none"
        )
        return make_hub(schema, url=runtime_login.url, statement_timeout_ms=10_000)

    return create


@pytest.fixture
def provider(provider_factory: ProviderFactory) -> TaskHub:
    return provider_factory()


@pytest.fixture
def corrupt_history(database_url: str) -> Callable[[TaskHub, str], None]:
    def corrupt(hub: TaskHub, instance: str) -> None:
        with psycopg.connect(database_url, autocommit=True) as conn:
            schema = hub.config.schema
            # A history stored as json refuses text that is not JSON: there the
            # corruption is JSON that is no event (a string), which the fetch
            # hands over as it hands over unparsable text elsewhere.
            garbage = "NOT_VALID_JSON{{{"
            if stores_history_as_json(conn, schema):
                garbage = json.dumps(garbage)
            conn.execute(
                f'UPDATE "{schema}".history SET event_data = %s WHERE instance_id = %s',
                [garbage, instance],
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
