"""TaskHub: the whole provider, one class over one task-hub schema."""

from __future__ import annotations

from typing import Any

from provider.client.instance_state import InstanceState
from provider.client.management import Management
from provider.client.orchestration_queue import OrchestrationQueue
from provider.client.worker_queue import WorkerQueue
from provider.config import TaskHubConfig


class TaskHub(OrchestrationQueue, WorkerQueue, InstanceState, Management):
    """One task hub (one schema) in one database.

    hub = TaskHub.connect("postgresql://app@db/app", schema="orders")
    item = hub.fetch_orchestration_item()
    """

    @classmethod
    def connect(cls, url: str, schema: str = "public", **settings: Any) -> TaskHub:
        return cls(TaskHubConfig(url=url, schema=schema, **settings))

    def __enter__(self) -> TaskHub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
