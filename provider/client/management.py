"""The management API: listing, inspection, deletion and pruning of instances."""

from __future__ import annotations

from collections.abc import Sequence

from provider.client.plans import Plan, Plans
from provider.client.procedures import now_ms
from provider.client.retention import DEFAULT_PRUNE_BATCH, MAX_PRUNE_BATCH
from provider.errors import InvalidInput, PermanentError
from provider.types import (
    DeleteResult,
    ExecutionInfo,
    InstanceInfo,
    InstanceTree,
    PrunedBatch,
    PruneResult,
    QueueDepths,
    SystemMetrics,
)

DEFAULT_BULK_LIMIT = 1000


class Management(Plans):
    def list_instances(self) -> Plan[list[str]]:
        rows = yield from self._call("list_instances")
        return [row["instance_id"] for row in rows]

    def list_instances_by_status(self, status: str) -> Plan[list[str]]:
        rows = yield from self._call("list_instances_by_status", p_status=status)
        return [row["instance_id"] for row in rows]

    def list_executions(self, instance_id: str) -> Plan[list[int]]:
        rows = yield from self._call("list_executions", p_instance_id=instance_id)
        return [int(row["execution_id"]) for row in rows]

    def latest_execution_id(self, instance_id: str) -> Plan[int]:
        execution_id = yield from self._scalar("latest_execution_id", p_instance_id=instance_id)
        return int(execution_id)

    def get_instance_info(self, instance_id: str) -> Plan[InstanceInfo]:
        rows = yield from self._call("get_instance_info", p_instance_id=instance_id)
        if not rows:
            raise PermanentError("get_instance_info", f"Instance {instance_id} not found")
        return InstanceInfo(**{**rows[0], "status": rows[0]["status"] or "Running"})

    def get_execution_info(self, instance_id: str, execution_id: int) -> Plan[ExecutionInfo]:
        rows = yield from self._call(
            "get_execution_info", p_instance_id=instance_id, p_execution_id=execution_id
        )
        if not rows:
            raise PermanentError(
                "get_execution_info", f"Execution {execution_id} of {instance_id} not found"
            )
        return ExecutionInfo(**rows[0])

    def get_system_metrics(self) -> Plan[SystemMetrics]:
        rows = yield from self._call("get_system_metrics")
        return SystemMetrics(**{name: int(value) for name, value in rows[0].items()})

    def get_queue_depths(self) -> Plan[QueueDepths]:
        rows = yield from self._call("get_queue_depths", p_now_ms=now_ms())
        return QueueDepths(int(rows[0]["orchestrator_queue"]), int(rows[0]["worker_queue"]))

    def list_children(self, instance_id: str) -> Plan[list[str]]:
        rows = yield from self._call("list_children", p_instance_id=instance_id)
        return [row["child_instance_id"] for row in rows]

    def get_parent_id(self, instance_id: str) -> Plan[str | None]:
        parent = yield from self._scalar("get_parent_id", p_instance_id=instance_id)
        return None if parent is None else str(parent)

    def get_instance_tree(self, root_id: str) -> Plan[InstanceTree]:
        """The instance and all its descendants, parents before children."""
        all_ids, frontier = [root_id], [root_id]
        while frontier:
            children: list[str] = []
            for parent in frontier:
                children += yield from self.list_children(parent)
            all_ids += children
            frontier = children
        return InstanceTree(root_id, all_ids)

    def delete_instances_atomic(
        self, instance_ids: Sequence[str], force: bool
    ) -> Plan[DeleteResult]:
        """Delete these instances together, or none of them (see the procedure)."""
        rows = yield from self._call(
            "delete_instances_atomic", p_instance_ids=list(instance_ids), p_force=force
        )
        return DeleteResult(**{name: int(value) for name, value in rows[0].items()})

    def delete_instance(self, instance_id: str, force: bool = False) -> Plan[DeleteResult]:
        """Delete a root instance with its whole sub-orchestration tree, or an
        instance not started (known only by its queued messages) with them.
        Runs taskhub_find_instances, then delete_instances_atomic."""
        # One read says whether it exists, whether it started, and its parent.
        found = yield from self._call(
            "taskhub_find_instances", p_instance_id=instance_id, p_limit=1
        )
        if found and found[0]["status"] == "Pending":
            return (yield from self.delete_instances_atomic([instance_id], force))
        if found:
            parent = found[0]["parent_instance_id"]
        else:  # unknown: the contract's own refusal ("Instance not found")
            parent = yield from self.get_parent_id(instance_id)
        if parent is not None:
            raise PermanentError(
                "delete_instance",
                f"Cannot delete sub-orchestration {instance_id} directly. "
                "Delete root instance instead.",
            )
        tree = yield from self.get_instance_tree(instance_id)
        return (yield from self.delete_instances_atomic(tree.all_ids, force))

    def delete_instance_bulk(
        self,
        *,
        instance_ids: Sequence[str] | None = None,
        completed_before_ms: int | None = None,
        limit: int = DEFAULT_BULK_LIMIT,
    ) -> Plan[DeleteResult]:
        """Delete ended root instances (and their trees) matching the filters; running ones stay.
        Runs taskhub_bulk_delete_candidates, then delete_instances_atomic."""
        roots = yield from self._call(
            "taskhub_bulk_delete_candidates",
            p_instance_ids=list(instance_ids) if instance_ids is not None else None,
            p_completed_before_ms=completed_before_ms,
            p_limit=limit,
        )
        total = DeleteResult()
        for root in roots:
            tree = yield from self.get_instance_tree(root["instance_id"])
            total += yield from self.delete_instances_atomic(tree.all_ids, True)
        return total

    def prune_ended(
        self, completed_before_ms: int, batch_size: int = DEFAULT_PRUNE_BATCH
    ) -> Plan[PrunedBatch]:
        """Delete one batch of ended root instances (current execution
        Completed, Failed or ContinuedAsNew, completed before
        completed_before_ms), oldest first, at most batch_size, each with its
        whole tree and everything it owns, in one transaction that waits for
        no other session (what is held elsewhere is left for a later batch).
        Call it again until roots_deleted is 0. Runs taskhub_prune_ended
        (revision 0020; an operator role may, a runtime role may not)."""
        operation = "prune_ended"
        if isinstance(completed_before_ms, bool) or not isinstance(completed_before_ms, int):
            raise InvalidInput(
                operation,
                f"completed_before_ms must be epoch milliseconds, got {completed_before_ms!r}",
            )
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or not 1 <= batch_size <= MAX_PRUNE_BATCH
        ):
            raise InvalidInput(
                operation, f"batch_size must be between 1 and {MAX_PRUNE_BATCH}, got {batch_size!r}"
            )
        rows = yield from self._call(
            "taskhub_prune_ended",
            p_completed_before_ms=completed_before_ms,
            p_batch_size=batch_size,
        )
        return PrunedBatch(**{name: int(value) for name, value in rows[0].items()})

    def dispatch_lag_ms(self) -> Plan[int]:
        """How many milliseconds the oldest orchestration message a dispatcher
        could take now has waited; 0 when none waits. Retention waits while
        it is high (provider/client/retention.py). Runs
        taskhub_dispatch_lag_ms (revision 0026; an operator role may)."""
        lag = yield from self._scalar("taskhub_dispatch_lag_ms")
        return int(lag)

    def prune_executions(
        self,
        instance_id: str,
        *,
        keep_last: int | None = None,
        completed_before_ms: int | None = None,
    ) -> Plan[PruneResult]:
        """Delete old executions of one instance; the current one is always kept."""
        rows = yield from self._call(
            "prune_executions",
            p_instance_id=instance_id,
            p_keep_last=keep_last,
            p_completed_before_ms=completed_before_ms,
        )
        return PruneResult(**{name: int(value) for name, value in rows[0].items()})

    def prune_executions_bulk(
        self,
        *,
        instance_ids: Sequence[str] | None = None,
        completed_before_ms: int | None = None,
        limit: int = DEFAULT_BULK_LIMIT,
        keep_last: int | None = None,
    ) -> Plan[PruneResult]:
        """prune_executions on every instance matching the filters, running ones included.
        Runs taskhub_bulk_prune_candidates, then prune_executions on each."""
        targets = yield from self._call(
            "taskhub_bulk_prune_candidates",
            p_instance_ids=list(instance_ids) if instance_ids is not None else None,
            p_completed_before_ms=completed_before_ms,
            p_limit=limit,
        )
        total = PruneResult()
        for target in targets:
            total += yield from self.prune_executions(
                target["instance_id"], keep_last=keep_last, completed_before_ms=completed_before_ms
            )
        return total
