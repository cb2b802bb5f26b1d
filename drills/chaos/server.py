"""Restarting the tests' own cluster in immediate mode, and waiting until it
accepts connections again (other tests use it after us)."""

from __future__ import annotations

import time

import psycopg

from provider.testing.embedded_pg import PG_CTL_TIMEOUT_S, EmbeddedPostgres, EmbeddedPostgresError


def restart_immediately(cluster: EmbeddedPostgres) -> None:
    try:
        cluster.restart("immediate")
    except EmbeddedPostgresError:
        if cluster.is_running():
            raise
        cluster.start()  # the restart left it down: bring it up, or fail loudly
    wait_until_accepting(cluster.url)


def wait_until_accepting(url: str, timeout_s: float = PG_CTL_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(url, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
