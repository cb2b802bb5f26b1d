"""The fixtures of the taskhub-pg pytest plugin (see plugin.py to turn it on).

* `taskhub_database_url` (session): TASKHUB_TEST_DATABASE_URL or DATABASE_URL,
  else a throwaway cluster started from the machine's PostgreSQL binaries.
* `taskhub_schema`: a schema migrated to head for one test, dropped after it.
* `taskhub`: a TaskHub on that schema.
* `run_activity`: provider.testing.run_activity bound to that hub:
  `run_activity(handler, input)` runs the handler once, on a real lease.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from provider.client.task_hub import TaskHub
from provider.deploy import migrate
from provider.testing.activities import ActivityOutcome
from provider.testing.activities import run_activity as run_one
from provider.testing.embedded_pg import EmbeddedPostgres


@pytest.fixture(scope="session")
def taskhub_database_url() -> Iterator[str]:
    url = os.environ.get("TASKHUB_TEST_DATABASE_URL") or os.environ.get("DATABASE_URL")
    if url:
        yield url
        return
    cluster = EmbeddedPostgres.create()
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def taskhub_schema(taskhub_database_url: str) -> Iterator[str]:
    schema = f"test_{uuid.uuid4().hex[:12]}"
    migrate.upgrade(taskhub_database_url, schema)
    yield schema
    migrate.drop_hub(taskhub_database_url, schema)


@pytest.fixture
def taskhub(taskhub_database_url: str, taskhub_schema: str) -> Iterator[TaskHub]:
    with TaskHub.connect(taskhub_database_url, taskhub_schema) as hub:
        yield hub


@pytest.fixture
def run_activity(taskhub: TaskHub) -> Callable[..., ActivityOutcome]:
    def run(handler: Callable[..., Any], value: Any = None, **options: Any) -> ActivityOutcome:
        return run_one(taskhub, handler, value, **options)

    return run
