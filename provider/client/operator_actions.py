"""The operator's actions on a hub, as plans, each written once for the
command line and the dashboard: requeue a dead letter, release a lease whose
holder is gone, count what a prune would delete. The deletes and the prune
itself are the runtime's own plans (provider/client/management.py), cancel
and raise-event the application's (provider/client/instance_requests.py)."""

from __future__ import annotations

from psycopg import sql

from provider.client.hub_views import CURRENT_EXECUTION
from provider.client.plans import Plan, Plans
from provider.client.reads import Column, Read, Where, counted
from provider.errors import DeadLetterNotFound, NoLeaseHeld, TaskHubError

# How far ahead of the database a caller's clock may stamp a row
# (sql/head/helpers/taskhub_max_clock_skew_ms.sql).
MAX_CLOCK_SKEW_MS = 1000
_FROM_EPOCH_MS = sql.SQL("to_timestamp({} / 1000.0)")
NOT_FOUND = "P0002"


class OperatorActions(Plans):
    def requeue_dead_letter(self, dead_letter_id: int) -> Plan[int]:
        """The dead letter back on its queue as a fresh message (attempt 0):
        its new id. DeadLetterNotFound when there is none with this id."""
        try:
            new_id = yield from self._scalar(
                "taskhub_requeue_dead_letter", p_dead_letter_id=dead_letter_id
            )
        except TaskHubError as error:
            if error.sqlstate != NOT_FOUND:
                raise
            raise DeadLetterNotFound(
                "requeue_dead_letter", f"dead letter {dead_letter_id} not found", NOT_FOUND
            ) from error
        return int(new_id)

    def release_lease(self, instance_id: str) -> Plan[None]:
        """Release the instance's orchestration lease at once (its holder is
        gone): its messages are ready again, the holder's late ack is
        refused. NoLeaseHeld when it holds none."""
        released = yield from self._scalar(
            "taskhub_release_orchestration_lease", p_instance_id=instance_id
        )
        if not released:
            raise NoLeaseHeld(
                "release_lease", f"instance {instance_id} holds no orchestration lease"
            )

    def release_activity_leases(self, instance_id: str) -> Plan[int]:
        """Give back at once every activity the instance's workers hold
        (taskhub_release_work_item_lease: no delay to ask for): how many.
        NoLeaseHeld when it holds none."""
        leased = yield from self._read(
            Read(
                "worker_queue",
                (Column("lock_token"),),
                (Where("instance_id", "=", instance_id), Where("lock_token", "IS NOT NULL")),
            )
        )
        released = 0
        for row in leased:
            done = yield from self._scalar(
                "taskhub_release_work_item_lease", p_lock_token=row["lock_token"]
            )
            released += bool(done)
        if released == 0:
            raise NoLeaseHeld(
                "release_activity_leases", f"instance {instance_id} holds no activity lease"
            )
        return released

    def count_prune_candidates(self, completed_before_ms: int, limit: int) -> Plan[int]:
        """How many ended root instances a prune would delete (up to limit):
        the roots taskhub_prune_ended picks (sql/head/management/), counted
        along the same bounded walk of taskhub_instances_created_idx, so that
        the count costs about what it counts, however large the hub."""
        rows = yield from self._read(
            counted(
                Read(
                    "instances",
                    (Column("i.instance_id"),),
                    alias="i",
                    joins=(CURRENT_EXECUTION,),
                    where=(
                        Where(
                            "i.created_at",
                            "<",
                            completed_before_ms + MAX_CLOCK_SKEW_MS,
                            around=_FROM_EPOCH_MS,
                        ),
                        Where("i.parent_instance_id", "IS NULL"),
                        Where("e.status", "= ANY", ["Completed", "Failed", "ContinuedAsNew"]),
                        Where("e.completed_at", "<", completed_before_ms, around=_FROM_EPOCH_MS),
                    ),
                    limit=limit,
                )
            )
        )
        return int(rows[0]["count"])
