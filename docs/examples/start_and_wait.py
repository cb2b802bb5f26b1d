"""Start an order inside the application's transaction, repeat the start (as
a retried request would), wait for the result and print it: the application
client only. Type-checked with `mypy --strict` by tests/client/test_sample_program.py.

    DATABASE_URL=postgresql://app@db/app TASKHUB_SCHEMA=orders python start_and_wait.py
"""

from __future__ import annotations

import os
import sys

import psycopg

from provider import Client, InstanceStatus, StartConflict, StartResult


def start_order(client: Client, url: str, order_id: int) -> StartResult:
    """The order row and its orchestration's start, committed together."""
    with psycopg.connect(url) as conn:
        # ... the application's own writes go here, in the same transaction ...
        return client.start(f"order-{order_id}", "ProcessOrder", {"id": order_id}, conn=conn)


def main() -> int:
    url = os.environ["DATABASE_URL"]
    schema = os.environ.get("TASKHUB_SCHEMA", "orders")
    with Client.connect(url, schema, pool_max_size=2, statement_timeout_ms=10_000) as client:
        first = start_order(client, url, 7)
        again = start_order(client, url, 7)
        print(f"started: {first.started}, repeat started: {again.started}")
        try:
            client.start("order-7", "RefundOrder", {"id": 7})
        except StartConflict as refused:
            print(f"refused: {refused.message}")
        done: InstanceStatus = client.wait_for_completion("order-7", timeout_s=30)
        print(f"{done.instance_id} {done.status}: {client.get_output('order-7')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
