"""The hub's client refuses a session that can do more than a role that
controls the hub (provider/standing.py): the hub's functions would run that
role's code with the session's rights. Asked on each connection the client
uses, first at connect (a one-line ConfigurationError) and then at each
pooled connection's first call (provider/client/procedures.py), since a
look taken once proves nothing about a connection opened later."""

from __future__ import annotations

from typing import Any

import psycopg

from provider.errors import ConfigurationError
from provider.standing import Standing, client_refusal, standing_query


def refuse_a_privileged_session(conn: psycopg.Connection[Any], schema: str, operation: str) -> None:
    row = conn.execute(standing_query(schema)).fetchone()
    assert row is not None
    refused = client_refusal(Standing.of_row(schema, row))
    if refused is not None:
        raise ConfigurationError(operation, refused)


async def refuse_a_privileged_session_async(
    conn: psycopg.AsyncConnection[Any], schema: str, operation: str
) -> None:
    row = await (await conn.execute(standing_query(schema))).fetchone()
    assert row is not None
    refused = client_refusal(Standing.of_row(schema, row))
    if refused is not None:
        raise ConfigurationError(operation, refused)
