"""The management API: listing, inspection, deletion and pruning of instances."""

from __future__ import annotations

from collections.abc import Sequence

from provider.client.procedures import ProcedureClient, now_ms
from provider.errors import PermanentError
from provider.types import (
    DeleteResult,
    ExecutionInfo,
    InstanceInfo,
    InstanceTree,
    PruneResult,
    QueueDepths,
    SystemMetrics,
)

DEFAULT_BULK_LIMIT = 1000


class Management(ProcedureClient):
    def list_instances(self) -> list[str]:
        return [row["instance_id"] for row in self._call("list_instances")]

    def list_instances_by_status(self, status: str) -> list[str]:
        rows = self._call("list_instances_by_status", p_status=status)
        return [row["instance_id"] for row in rows]

    def list_executions(self, instance_id: str) -> list[int]:
        rows = self._call("list_executions", p_instance_id=instance_id)
        return [int(row["execution_id"]) for row in rows]

    def latest_execution_id(self, instance_id: str) -> int:
        return int(self._scalar("latest_execution_id", p_instance_id=instance_id))

    def get_instance_info(self, instance_id: str) -> InstanceInfo:
        rows = self._call("get_instance_info", p_instance_id=instance_id)
        if not rows:
            raise PermanentError("get_instance_info", f"Instance {instance_id} not found")
        return InstanceInfo(**{**rows[0], "status": rows[0]["status"] or "Running"})

    def get_execution_info(self, instance_id: str, execution_id: int) -> ExecutionInfo:
        rows = self._call(
            "get_execution_info", p_instance_id=instance_id, p_execution_id=execution_id
        )
        if not rows:
            raise PermanentError(
                "get_execution_info", f"Execution {execution_id} of {instance_id} not found"
            )
        return ExecutionInfo(**rows[0])

    def get_system_metrics(self) -> SystemMetrics:
        row = self._call("get_system_metrics")[0]
        return SystemMetrics(**{name: int(value) for name, value in row.items()})

    def get_queue_depths(self) -> QueueDepths:
        row = self._call("get_queue_depths", p_now_ms=now_ms())[0]
        return QueueDepths(int(row["orchestrator_queue"]), int(row["worker_queue"]))

    def list_children(self, instance_id: str) -> list[str]:
        rows = self._call("list_children", p_instance_id=instance_id)
        return [row["child_instance_id"] for row in rows]

    def get_parent_id(self, instance_id: str) -> str | None:
        parent = self._scalar("get_parent_id", p_instance_id=instance_id)
        return None if parent is None else str(parent)

    def get_instance_tree(self, root_id: str) -> InstanceTree:
        """The instance and all its descendants, parents before children."""
        all_ids, frontier = [root_id], [root_id]
        while frontier:
            children = [child for parent in frontier for child in self.list_children(parent)]
            all_ids += children
            frontier = children
        return InstanceTree(root_id, all_ids)

    def delete_instances_atomic(self, instance_ids: Sequence[str], force: bool) -> DeleteResult:
        """Delete these instances together, or none of them (see the procedure)."""
        row = self._call(
            "delete_instances_atomic", p_instance_ids=list(instance_ids), p_force=force
        )[0]
        return DeleteResult(**{name: int(value) for name, value in row.items()})

    def delete_instance(self, instance_id: str, force: bool = False) -> DeleteResult:
        """Delete a root instance with its whole sub-orchestration tree."""
        if self.get_parent_id(instance_id) is not None:
            raise PermanentError(
                "delete_instance",
                f"Cannot delete sub-orchestration {instance_id} directly. "
                "Delete root instance instead.",
            )
        return self.delete_instances_atomic(self.get_instance_tree(instance_id).all_ids, force)

    def delete_instance_bulk(
        self,
        *,
        instance_ids: Sequence[str] | None = None,
        completed_before_ms: int | None = None,
        limit: int = DEFAULT_BULK_LIMIT,
    ) -> DeleteResult:
        """Delete ended root instances (and their trees) matching the filters; running ones stay."""
        roots = self._call(
            "taskhub_bulk_delete_candidates",
            p_instance_ids=list(instance_ids) if instance_ids is not None else None,
            p_completed_before_ms=completed_before_ms,
            p_limit=limit,
        )
        total = DeleteResult()
        for root in roots:
            tree = self.get_instance_tree(root["instance_id"])
            total += self.delete_instances_atomic(tree.all_ids, True)
        return total

    def prune_executions(
        self,
        instance_id: str,
        *,
        keep_last: int | None = None,
        completed_before_ms: int | None = None,
    ) -> PruneResult:
        """Delete old executions of one instance; the current one is always kept."""
        row = self._call(
            "prune_executions",
            p_instance_id=instance_id,
            p_keep_last=keep_last,
            p_completed_before_ms=completed_before_ms,
        )[0]
        return PruneResult(**{name: int(value) for name, value in row.items()})

    def prune_executions_bulk(
        self,
        *,
        instance_ids: Sequence[str] | None = None,
        completed_before_ms: int | None = None,
        limit: int = DEFAULT_BULK_LIMIT,
        keep_last: int | None = None,
    ) -> PruneResult:
        """prune_executions on every instance matching the filters, running ones included."""
        targets = self._call(
            "taskhub_bulk_prune_candidates",
            p_instance_ids=list(instance_ids) if instance_ids is not None else None,
            p_completed_before_ms=completed_before_ms,
            p_limit=limit,
        )
        total = PruneResult()
        for target in targets:
            total += self.prune_executions(
                target["instance_id"], keep_last=keep_last, completed_before_ms=completed_before_ms
            )
        return total
