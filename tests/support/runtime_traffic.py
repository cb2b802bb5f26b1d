"""Real traffic on a hub for the dashboard's tests: the duroxide 0.2.2 runtime
runs a few orchestrations of each kind to their end, or to a wait.

    Checkout  two activities around a timer, a custom status and a KV value:
              Completed (checkout-1 .. checkout-N)
    Refund    an activity that raises: Failed (refund-1)
    Approval  waits for an event that never comes: Running (approval-1)
    Shipment  a sub-orchestration of a Checkout-like child: Completed (shipment-1)
"""

from __future__ import annotations

from typing import Any

import duroxide

from devkit.waiting import wait_until


def run_traffic(database_url: str, schema: str, checkouts: int = 3) -> list[str]:
    """Run the orchestrations; the ids of the instances started (all ended or waiting)."""
    dx_provider = duroxide.PostgresProvider.connect_with_schema(database_url, schema)
    runtime = duroxide.Runtime(dx_provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10))

    @runtime.register_activity("Reserve")
    def reserve(ctx: Any, order: Any) -> str:
        return f"reserved {order['sku']}"

    @runtime.register_activity("Charge")
    def charge(ctx: Any, order: Any) -> str:
        return f"charged {order['amount']}"

    @runtime.register_activity("Reimburse")
    def reimburse(ctx: Any, order: Any) -> str:
        raise RuntimeError(f"the card of {order['sku']} was closed")

    @runtime.register_orchestration("Checkout")
    def checkout(ctx: Any, order: Any) -> Any:
        ctx.set_custom_status("reserving")
        reserved = yield ctx.schedule_activity("Reserve", order)
        yield ctx.schedule_timer(20)
        ctx.set_kv_value("reserved", reserved)
        charged = yield ctx.schedule_activity("Charge", order)
        ctx.set_custom_status("done")
        return {"reserved": reserved, "charged": charged}

    @runtime.register_orchestration("Refund")
    def refund(ctx: Any, order: Any) -> Any:
        return (yield ctx.schedule_activity("Reimburse", order))

    @runtime.register_orchestration("Approval")
    def approval(ctx: Any, order: Any) -> Any:
        return (yield ctx.wait_for_event("Approved"))

    @runtime.register_orchestration("Shipment")
    def shipment(ctx: Any, order: Any) -> Any:
        return (yield ctx.schedule_sub_orchestration("Checkout", order))

    client = duroxide.Client(dx_provider)
    runtime.start()
    ended = [f"checkout-{n}" for n in range(1, checkouts + 1)] + ["refund-1", "shipment-1"]
    try:
        for n, instance in enumerate(ended, start=1):
            name = instance.split("-")[0].capitalize()
            client.start_orchestration(instance, name, {"sku": f"sku-{n}", "amount": 10 * n})
        client.start_orchestration("approval-1", "Approval", {"sku": "sku-0", "amount": 0})
        for instance in ended:
            status = client.wait_for_orchestration(instance, 30_000).status
            assert status in ("Completed", "Failed"), (instance, status)
        wait_until(
            lambda: client.get_status("approval-1").status == "Running",
            timeout_s=10,
            message="approval-1 to wait for its event",
        )
    finally:
        runtime.shutdown(timeout_ms=2_000)
    return [*ended, "approval-1"]
