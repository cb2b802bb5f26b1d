"""A user's code on both faces of the provider: `mypy --strict` must pass on it
with taskhub-pg installed from its wheel (tests/deploy/test_wheel.py)."""

from __future__ import annotations

import asyncio

from provider import AsyncTaskHub, LockLost, OrchestrationItem, TaskHub, WorkItemLease


def lease_one(url: str) -> OrchestrationItem | None:
    with TaskHub.connect(url, schema="orders") as hub:
        item = hub.fetch_orchestration_item(30_000)
        if item is not None:
            hub.abandon_orchestration_item(item.lock_token, delay_ms=100)
        return item


async def work_one(url: str) -> WorkItemLease | None:
    async with AsyncTaskHub.connect(url, schema="orders") as hub:
        lease = await hub.fetch_work_item(30_000)
        if lease is None:
            return None
        try:
            until: int = await hub.renew_work_item_lock(lease.lock_token, 30_000)
            assert until > 0
        except LockLost:
            return None
        await hub.ack_work_item(lease.lock_token, None)
        return lease


if __name__ == "__main__":
    asyncio.run(work_one("postgresql://localhost/app"))
