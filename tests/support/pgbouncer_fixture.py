"""PgBouncer in the suite: the fixture that starts it in front of the tests'
server (devkit/pgbouncer.py runs it), and the rule when it is missing."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from devkit.pgbouncer import PGBOUNCER, PgBouncer, PoolMode, available, pgbouncer


def require_pgbouncer() -> None:
    """Skip without PgBouncer, except on CI, where .ci/run installs it: there
    its absence is a failure, not a silent skip."""
    if available():
        return
    reason = f"needs Debian's PgBouncer ({PGBOUNCER}; apt-get install -y pgbouncer)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: .ci/run installs it")
    pytest.skip(reason)


@pytest.fixture
def start_pgbouncer(database_url: str) -> Iterator[Callable[..., PgBouncer]]:
    """start_pgbouncer(mode, pool_size=4): PgBouncer in front of the tests'
    server, stopped after the test."""
    require_pgbouncer()
    with ExitStack() as stack:

        def start(mode: PoolMode, pool_size: int = 4) -> PgBouncer:
            return stack.enter_context(pgbouncer(database_url, mode, pool_size))

        yield start
