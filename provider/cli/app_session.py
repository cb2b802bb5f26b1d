"""The application client the command line's verbs run (schedules, flow
control): one connection, no pool kept, and the client's refusals turned
into the verbs' exit codes (a bad argument: 2, a schedule not there: 3)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from provider.cli.options import NOT_FOUND, USAGE, database_url, fail
from provider.client.app_client import Client
from provider.client.pooling import ONE_SHOT_POOLER
from provider.errors import InvalidInput, ScheduleNotFound


@contextmanager
def app_client(url: str | None, schema: str) -> Iterator[Client]:
    """The hub's client; a refusal of the arguments or of a name ends the verb."""
    try:
        with Client.connect(
            database_url(url), schema, pool_min_size=1, pooler=ONE_SHOT_POOLER
        ) as client:
            yield client
    except InvalidInput as error:
        fail(USAGE, error.message)
    except ScheduleNotFound as error:
        fail(NOT_FOUND, error.message)
