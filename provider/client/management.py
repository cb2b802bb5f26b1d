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
        return [row[0] for row in self._call("list_instances", [])]

    def list_instances_by_status(self, status: str) -> list[str]:
        return [row[0] for row in self._call("list_instances_by_status", [status])]

    def list_executions(self, instance_id: str) -> list[int]:
        return [int(row[0]) for row in self._call("list_executions", [instance_id])]

    def latest_execution_id(self, instance_id: str) -> int:
        return int(self._scalar("latest_execution_id", [instance_id]))

    def get_instance_info(self, instance_id: str) -> InstanceInfo:
        rows = self._call("get_instance_info", [instance_id])
        if not rows:
            raise PermanentError("get_instance_info", f"Instance {instance_id} not found")
        (iid, name, version, execution, created, updated, status, output, parent) = rows[0]
        return InstanceInfo(
            iid, name, version, execution, created, updated, status or "Running", output, parent
        )

    def get_execution_info(self, instance_id: str, execution_id: int) -> ExecutionInfo:
        rows = self._call("get_execution_info", [instance_id, execution_id])
        if not rows:
            raise PermanentError(
                "get_execution_info", f"Execution {execution_id} of {instance_id} not found"
            )
        return ExecutionInfo(*rows[0])

    def get_system_metrics(self) -> SystemMetrics:
        return SystemMetrics(*(int(value) for value in self._call("get_system_metrics", [])[0]))

    def get_queue_depths(self) -> QueueDepths:
        orchestrator, worker = self._call("get_queue_depths", [now_ms()])[0]
        return QueueDepths(int(orchestrator), int(worker))

    def list_children(self, instance_id: str) -> list[str]:
        return [row[0] for row in self._call("list_children", [instance_id])]

    def get_parent_id(self, instance_id: str) -> str | None:
        parent = self._scalar("get_parent_id", [instance_id])
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
        row = self._call("delete_instances_atomic", [list(instance_ids), force])[0]
        return DeleteResult(*(int(value) for value in row))

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
            [list(instance_ids) if instance_ids is not None else None, completed_before_ms, limit],
        )
        total = DeleteResult()
        for (root,) in roots:
            total += self.delete_instances_atomic(self.get_instance_tree(root).all_ids, True)
        return total

    def prune_executions(
        self,
        instance_id: str,
        *,
        keep_last: int | None = None,
        completed_before_ms: int | None = None,
    ) -> PruneResult:
        """Delete old executions of one instance; the current one is always kept."""
        row = self._call("prune_executions", [instance_id, keep_last, completed_before_ms])[0]
        return PruneResult(*(int(value) for value in row))

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
            [list(instance_ids) if instance_ids is not None else None, completed_before_ms, limit],
        )
        total = PruneResult()
        for (instance_id,) in targets:
            total += self.prune_executions(
                instance_id, keep_last=keep_last, completed_before_ms=completed_before_ms
            )
        return total
