"""The operator's side of hubs on Citus (docs/scale-out.md): where a hub is,
and moving it to another node while its runtimes run.

A move is Citus's own `citus_schema_move`, in `block_writes` mode (the hub's
unlogged wakeup table cannot be carried by logical replication). Writes to
the hub wait while its tables are copied; calls keep their connections: a
call that reaches the old node afterwards is routed to the new one by Citus
(one more hop) until its client reconnects.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import psycopg

from provider.citus_placement import CITUS_PRESENT, PLACEMENT_QUERY, Node, node_url
from provider.schema_name import quote_schema
from provider.standing import PIN_SEARCH_PATH, Standing, refusal, standing_query


class CitusRefused(Exception):
    """A placement question or a move that cannot be answered or made."""


# The nodes that can hold hubs: primary, active, with shards allowed.
_WORKERS = """
SELECT nodename, nodeport
  FROM pg_catalog.pg_dist_node
 WHERE noderole = 'primary' AND isactive AND shouldhaveshards AND groupid <> 0
 ORDER BY nodename, nodeport
"""


@dataclass(frozen=True)
class Placement:
    schema: str
    node: Node
    url: str = field(repr=False)  # the node's URL: it holds the URL's password

    def as_dict(self) -> dict[str, Any]:
        return {"schema": self.schema, "host": self.node.host, "port": self.node.port}


@dataclass(frozen=True)
class Moved:
    schema: str
    was: Node
    now: Node
    seconds: float

    def summary(self) -> str:
        if self.was == self.now:
            return f"schema {self.schema}: on {self.now} already, nothing moved"
        return f"schema {self.schema}: moved from {self.was} to {self.now} in {self.seconds:.1f} s"

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": self.schema,
            "was": str(self.was),
            "now": str(self.now),
            "seconds": round(self.seconds, 3),
        }


def hub_node(conn: psycopg.Connection[Any], schema: str) -> Node | None:
    """The node that holds the hub; None when the hub is not distributed (or
    the database has no Citus)."""
    present = conn.execute(CITUS_PRESENT).fetchone()
    if not present or not present[0]:
        return None
    rows = conn.execute(PLACEMENT_QUERY, {"schema": schema}).fetchall()
    if len(rows) > 1:
        raise CitusRefused(
            f"schema {schema} has tables on {len(rows)} nodes: not one hub placed by schema"
        )
    return Node(str(rows[0][0]), int(rows[0][1])) if rows else None


def workers(conn: psycopg.Connection[Any]) -> list[Node]:
    return [Node(str(host), int(port)) for host, port in conn.execute(_WORKERS).fetchall()]


def placement(conn: psycopg.Connection[Any], url: str, schema: str) -> Placement:
    """Where the hub is, and the URL to reach it there (`url`, the
    coordinator's that `conn` was opened with, at the hub's node)."""
    node = hub_node(conn, schema)
    if node is None:
        raise CitusRefused(f"schema {schema} is not distributed on Citus: its URL is the one given")
    return Placement(schema, node, node_url(url, node))


def move(conn: psycopg.Connection[Any], schema: str, to: Node) -> Moved:
    """Move the hub to the worker `to` (one of the cluster's), writes waiting
    while its tables are copied; a no-op when it is there already. `conn`:
    the coordinator's, autocommit. The copy runs the hub's triggers, defaults
    and checks, which are its owner's: refused, on this connection, to a
    session that can do more than the owner (docs/security.md)."""
    conn.execute(PIN_SEARCH_PATH)
    row = conn.execute(standing_query(schema)).fetchone()
    refused = refusal(Standing.of_row(schema, row), "a move") if row else "no look"
    if refused is not None:
        raise CitusRefused(refused)
    was = hub_node(conn, schema)
    if was is None:
        raise CitusRefused(f"schema {schema} is not distributed on Citus: nothing to move")
    candidates = workers(conn)
    if to not in candidates:
        listed = ", ".join(str(node) for node in candidates) or "none"
        raise CitusRefused(f"{to} is not a worker that can hold hubs (the cluster's: {listed})")
    if to == was:
        return Moved(schema, was, to, 0.0)
    started = time.monotonic()
    conn.execute(
        "SELECT pg_catalog.citus_schema_move(%s::regnamespace, %s, %s, 'block_writes')",
        [quote_schema(schema), to.host, to.port],
    )
    return Moved(schema, was, to, time.monotonic() - started)
