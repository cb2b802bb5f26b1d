"""Flow control as plans: pause and resume an activity, a label or an
orchestration, limit how many of its items (an orchestration: its turns)
run at once over the whole hub (a label's each value its own limit, per
tenant) or how many start a second, and
list the rules with their use. The hub enforces them in fetch_work_item, so every runtime
obeys them (sql/head/flow_control/, docs/flow-control.md); these plans only
change and read them, and every change is kept with who made it and why
(taskhub_flow_changes)."""

from __future__ import annotations

from typing import Any

from provider.client.arguments import check_text, utf8_size
from provider.client.catalogue import Catalogue
from provider.client.plans import Plan
from provider.errors import InvalidInput
from provider.types import FlowRule

MAX_NAME_BYTES = 1000
MAX_REASON_BYTES = 2000
MAX_RUNNING = 10_000
MAX_PER_SECOND = 100_000
MAX_BURST = 100_000


def _check_key(operation: str, name: Any, reason: Any) -> None:
    check_text(operation, "name", name)
    if utf8_size(operation, "name", name) > MAX_NAME_BYTES:
        raise InvalidInput(operation, f"a flow rule's name has at most {MAX_NAME_BYTES} bytes")
    if reason is not None:
        check_text(operation, "reason", reason)
        if utf8_size(operation, "reason", reason) > MAX_REASON_BYTES:
            raise InvalidInput(operation, f"reason has at most {MAX_REASON_BYTES} bytes")


def _check_max_running(operation: str, max_running: Any) -> None:
    if (
        not isinstance(max_running, int)
        or isinstance(max_running, bool)
        or not 1 <= max_running <= MAX_RUNNING
    ):
        raise InvalidInput(operation, f"max_running must be a whole number from 1 to {MAX_RUNNING}")


def _check_rate(operation: str, per_second: Any, burst: Any) -> None:
    if (
        not isinstance(per_second, int | float)
        or isinstance(per_second, bool)
        or not 0 < per_second <= MAX_PER_SECOND
    ):
        raise InvalidInput(
            operation, f"per_second must be a number above 0 and at most {MAX_PER_SECOND}"
        )
    if burst is not None and (
        not isinstance(burst, int) or isinstance(burst, bool) or not 1 <= burst <= MAX_BURST
    ):
        raise InvalidInput(operation, f"burst must be a whole number from 1 to {MAX_BURST}")


class FlowControlPlans(Catalogue):
    """Each verb for each kind of key: an activity's name, a label
    ('tenant=acme': the items of the instances started with it), or a
    label's key limited value by value ('tenant': each tenant its own limit).
    The hub checks a label's form (taskhub_check_steering)."""

    # The verbs, written once for every kind of key.

    def _pause(self, operation: str, kind: str, name: str, reason: str | None) -> Plan[bool]:
        _check_key(operation, name, reason)
        was = yield from self._scalar(
            "taskhub_pause_flow", p_kind=kind, p_name=name, p_reason=reason
        )
        return bool(was)

    def _resume(self, operation: str, kind: str, name: str, reason: str | None) -> Plan[bool]:
        _check_key(operation, name, reason)
        was = yield from self._scalar(
            "taskhub_resume_flow", p_kind=kind, p_name=name, p_reason=reason
        )
        return bool(was)

    def _set_limit(
        self, operation: str, kind: str, name: str, max_running: int, reason: str | None
    ) -> Plan[int | None]:
        _check_key(operation, name, reason)
        _check_max_running(operation, max_running)
        before = yield from self._scalar(
            "taskhub_set_flow_limit",
            p_kind=kind,
            p_name=name,
            p_max_running=max_running,
            p_reason=reason,
        )
        return None if before is None else int(before)

    def _remove_limit(
        self, operation: str, kind: str, name: str, reason: str | None
    ) -> Plan[int | None]:
        _check_key(operation, name, reason)
        before = yield from self._scalar(
            "taskhub_remove_flow_limit", p_kind=kind, p_name=name, p_reason=reason
        )
        return None if before is None else int(before)

    def _set_rate(
        self,
        operation: str,
        kind: str,
        name: str,
        per_second: float,
        burst: int | None,
        reason: str | None,
    ) -> Plan[float | None]:
        _check_key(operation, name, reason)
        _check_rate(operation, per_second, burst)
        before = yield from self._scalar(
            "taskhub_set_flow_rate",
            p_kind=kind,
            p_name=name,
            p_per_second=float(per_second),
            p_burst=burst,
            p_reason=reason,
        )
        return None if before is None else float(before)

    def _remove_rate(
        self, operation: str, kind: str, name: str, reason: str | None
    ) -> Plan[float | None]:
        _check_key(operation, name, reason)
        before = yield from self._scalar(
            "taskhub_remove_flow_rate", p_kind=kind, p_name=name, p_reason=reason
        )
        return None if before is None else float(before)

    # By activity.

    def pause_activity(self, name: str, *, reason: str | None = None) -> Plan[bool]:
        """Hand out none of the activity's items, to any worker or runtime,
        until it is resumed; those leased already finish. Whether it was
        paused already."""
        return (yield from self._pause("pause_activity", "activity", name, reason))

    def resume_activity(self, name: str, *, reason: str | None = None) -> Plan[bool]:
        """Hand out the activity's items again, oldest first. Whether it was paused."""
        return (yield from self._resume("resume_activity", "activity", name, reason))

    def set_activity_limit(
        self, name: str, max_running: int, *, reason: str | None = None
    ) -> Plan[int | None]:
        """Let at most `max_running` of the activity's items hold a lease at
        once, over every worker and runtime of the hub. The limit before
        (None: there was none)."""
        limit = self._set_limit("set_activity_limit", "activity", name, max_running, reason)
        return (yield from limit)

    def remove_activity_limit(self, name: str, *, reason: str | None = None) -> Plan[int | None]:
        """Remove the activity's limit (a pause stays). The limit before."""
        return (yield from self._remove_limit("remove_activity_limit", "activity", name, reason))

    def set_activity_rate(
        self,
        name: str,
        per_second: float,
        *,
        burst: int | None = None,
        reason: str | None = None,
    ) -> Plan[float | None]:
        """Hand out at most `per_second` of the activity's items a second on
        average, with bursts up to `burst` (default: one second's worth),
        over every worker and runtime of the hub. The rate before (None:
        there was none)."""
        rate = self._set_rate("set_activity_rate", "activity", name, per_second, burst, reason)
        return (yield from rate)

    def remove_activity_rate(self, name: str, *, reason: str | None = None) -> Plan[float | None]:
        """Remove the activity's rate limit (a pause or a concurrency limit stays).
        The rate before."""
        return (yield from self._remove_rate("remove_activity_rate", "activity", name, reason))

    # By label: 'key=value', or a key limited value by value.

    def pause_label(self, label: str, *, reason: str | None = None) -> Plan[bool]:
        """Hand out none of the items of the instances started with `label`
        ('tenant=acme'), to any worker or runtime, until it is resumed.
        Whether it was paused already."""
        return (yield from self._pause("pause_label", "label", label, reason))

    def resume_label(self, label: str, *, reason: str | None = None) -> Plan[bool]:
        """Hand out the label's items again. Whether it was paused."""
        return (yield from self._resume("resume_label", "label", label, reason))

    def set_label_limit(
        self, label: str, max_running: int, *, each_value: bool = False, reason: str | None = None
    ) -> Plan[int | None]:
        """Let at most `max_running` items of the label `label` ('tenant=acme')
        hold a lease at once; with `each_value`, `label` is a key ('tenant')
        and each of its values gets that limit (per tenant). The limit
        before (None: there was none)."""
        kind = "label_each" if each_value else "label"
        return (yield from self._set_limit("set_label_limit", kind, label, max_running, reason))

    def remove_label_limit(
        self, label: str, *, each_value: bool = False, reason: str | None = None
    ) -> Plan[int | None]:
        """Remove a label's limit (or a key's, with `each_value`). The limit before."""
        kind = "label_each" if each_value else "label"
        return (yield from self._remove_limit("remove_label_limit", kind, label, reason))

    def set_label_rate(
        self,
        label: str,
        per_second: float,
        *,
        burst: int | None = None,
        reason: str | None = None,
    ) -> Plan[float | None]:
        """Hand out at most `per_second` items of the label a second on
        average, with bursts up to `burst`. The rate before."""
        rate = self._set_rate("set_label_rate", "label", label, per_second, burst, reason)
        return (yield from rate)

    def remove_label_rate(self, label: str, *, reason: str | None = None) -> Plan[float | None]:
        """Remove the label's rate limit. The rate before."""
        return (yield from self._remove_rate("remove_label_rate", "label", label, reason))

    # By orchestration: its turns (fetch_orchestration_item), not its activities.

    def pause_orchestration(self, name: str, *, reason: str | None = None) -> Plan[bool]:
        """Hand out none of the orchestration's turns, to any runtime, until
        it is resumed; turns leased already finish, and the activities its
        instances queued still run (pause those by activity or label).
        Whether it was paused already."""
        return (yield from self._pause("pause_orchestration", "orchestration", name, reason))

    def resume_orchestration(self, name: str, *, reason: str | None = None) -> Plan[bool]:
        """Hand out the orchestration's turns again. Whether it was paused."""
        return (yield from self._resume("resume_orchestration", "orchestration", name, reason))

    def set_orchestration_limit(
        self, name: str, max_running: int, *, reason: str | None = None
    ) -> Plan[int | None]:
        """Let at most `max_running` of the orchestration's instances hold a
        turn's lease at once, over every runtime of the hub. The limit
        before (None: there was none)."""
        limit = self._set_limit(
            "set_orchestration_limit", "orchestration", name, max_running, reason
        )
        return (yield from limit)

    def remove_orchestration_limit(
        self, name: str, *, reason: str | None = None
    ) -> Plan[int | None]:
        """Remove the orchestration's limit (a pause stays). The limit before."""
        remove = self._remove_limit("remove_orchestration_limit", "orchestration", name, reason)
        return (yield from remove)

    def flow_rules_of_any_revision(self) -> Plan[list[FlowRule]]:
        """The flow rules on a hub of any revision: none before 0029, which
        has no flow control (the metrics, status)."""
        if not (yield from self.has_function("taskhub_read_flow_rules()")):
            return []
        return (yield from self.flow_rules())

    def flow_rules(self) -> Plan[list[FlowRule]]:
        """Every flow rule, by kind and name, with the slots in use."""
        rows = yield from self._call("taskhub_read_flow_rules")
        return [
            FlowRule(
                kind=row["kind"],
                name=row["name"],
                paused=bool(row["paused"]),
                max_running=row["max_running"],
                running=int(row["running"]),
                per_second=row["per_second"],
                burst=row["burst"],
                tokens=row["tokens"],
                changed_at=row["changed_at"],
                changed_by=row["changed_by"],
                reason=row["reason"],
                turns=int(row["turns"]),
            )
            for row in rows
        ]
