"""The call gate on the node of a hub distributed by Citus.

A gated call takes the hub's call gate (an advisory lock) where its body
runs. Through the coordinator that is the coordinator, where a migration run
closes the gate in its own transaction. But a call made in one hop, on a
client connected to the hub's node (`taskhub-pg citus placement`,
`TaskHubConfig.citus_direct`), runs its body on the node, and an advisory
lock is a node's own. So a run on a distributed hub closes the gate on the
node too: a transaction of its own there, opened when the run closes the
coordinator's gate and ended once the run's transaction has committed (the
node has the new definitions by then: Citus commits its part first).
"""

from __future__ import annotations

import time
from typing import Any

import psycopg
from sqlalchemy import Connection, text

from provider.citus_placement import CITUS_PRESENT, PLACEMENT_QUERY, Node, node_url
from provider.deploy import privileged_session
from provider.deploy.table_locks import (
    CALL_GATE,
    LOCK_NOT_AVAILABLE,
    LockNotTaken,
    call_gate_statement,
)

# How the gate's session shows in the node's pg_stat_activity.
APPLICATION_NAME = "taskhub-pg migration (call gate)"


class NodeGate:
    """The gate on the hub's node, held from close() until open()."""

    def __init__(self, url: str, schema: str) -> None:
        self.url = url  # the coordinator's, as the run was given it
        self.schema = schema
        self._held: psycopg.Connection[Any] | None = None

    def node_of(self, connection: Connection) -> Node | None:
        """The node that holds the hub, asked on the run's connection."""
        if not connection.exec_driver_sql(CITUS_PRESENT).scalar():
            return None
        rows = connection.execute(
            text(PLACEMENT_QUERY.replace("%(schema)s", ":schema")), {"schema": self.schema}
        ).fetchall()
        return Node(str(rows[0][0]), int(rows[0][1])) if len(rows) == 1 else None

    def close(self, connection: Connection) -> None:
        """Close the gate on the hub's node, if the hub is distributed, under
        the run's lock_timeout; raise LockNotTaken (the run tries again) when
        it is not granted in time."""
        if self._held is not None:
            return
        node = self.node_of(connection)
        if node is None:
            return
        lock_timeout = str(connection.exec_driver_sql("SHOW lock_timeout").scalar())
        started = time.monotonic()
        held: psycopg.Connection[Any] = privileged_session.connect(
            node_url(self.url, node), application_name=APPLICATION_NAME
        )
        try:
            held.execute("SELECT pg_catalog.set_config('lock_timeout', %s, false)", [lock_timeout])
            held.execute(call_gate_statement(self.schema))
        except psycopg.Error as error:
            held.close()
            if error.sqlstate == LOCK_NOT_AVAILABLE:
                raise LockNotTaken(CALL_GATE, (time.monotonic() - started) * 1000) from None
            raise
        self._held = held

    def open(self) -> None:
        """Let the node's calls through again (after the run's commit, or
        when its transaction failed)."""
        held, self._held = self._held, None
        if held is not None:
            held.close()  # the gate's transaction ends with its connection
