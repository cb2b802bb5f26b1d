"""A worker item as both workers read it: once, at fetch."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from provider.shapes import activity_body, decode_input
from provider.types import JsonObject, WorkItemLease


@dataclass(frozen=True)
class ActivityItem:
    """A worker item as the worker reads it, once, at fetch: its lease, its
    ActivityExecute body (None: an item this worker cannot read) and when
    the fetch began (the lease keeper counts the lease from there)."""

    lease: WorkItemLease
    body: JsonObject | None
    fetched_at: float

    @classmethod
    def fetched(cls, lease: WorkItemLease, fetched_at: float | None = None) -> ActivityItem:
        at = time.monotonic() if fetched_at is None else fetched_at
        return cls(lease, activity_body(lease.work_item), at)

    @property
    def lock_token(self) -> str:
        return self.lease.lock_token

    @property
    def name(self) -> str:
        return str((self.body or {}).get("name"))

    @property
    def keeper_name(self) -> str:
        """How the item's lease keeper is named in the logs: instance:activity#id."""
        body = self.body or {}
        return f"{body.get('instance')}:{body.get('name')}#{body.get('id')}"

    def input(self) -> Any:
        return decode_input(self.body or {})
