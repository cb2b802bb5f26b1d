"""The hot path never JIT-compiles: fetch and ack on both queues plan with
enable_seqscan off, which prices plans past jit_above_cost, and compiling a
candidate scan took 12-19 ms per fetch on a deep queue (0.5 ms without).
Revision 0010 sets jit = off on them; 0006 to 0009 have the defect."""

from __future__ import annotations

import psycopg
import pytest

from devkit.workloads.flavours import Flavour
from tests.support.hot_path_plans import explained_fetch_and_ack, queue_work


def jit_compiled_statements(url: str, schema: str) -> list[str]:
    """The statements of one fetch and ack on each queue that were JIT-compiled,
    with JIT made as eager as it gets for this session."""
    queue_work(url, schema, ["jit"])
    with psycopg.connect(url, autocommit=True) as conn:
        if conn.execute("SELECT pg_jit_available()").fetchone() != (True,):
            pytest.skip("this server has no JIT provider")
        eager = ("SET auto_explain.log_analyze = on", "SET jit = on", "SET jit_above_cost = 0")
        plans = explained_fetch_and_ack(conn, schema, eager)
    q = f'"{schema}"'
    # The calls above are this session's own statements: JIT compiles them.
    own = ("Query Text: SELECT out_lock_token", f"Query Text: SELECT {q}.")
    nested = [plan for plan in plans if not any(mark in plan for mark in own)]
    return [plan.split("\n")[1][:120] for plan in nested if "\nJIT:" in plan]


@pytest.mark.pins_defect(
    "the hot path plans with enable_seqscan off and JIT-compiles its queries",
    fails_on=("taskhub-0009",),
)
def test_fetch_and_ack_never_jit_compile(
    flavour: Flavour, flavour_schema: str, database_url: str
) -> None:
    if flavour.name == "duroxide-0.2.2":
        pytest.skip("duroxide 0.2.2 does not price seq scans out")
    assert jit_compiled_statements(database_url, flavour_schema) == []
