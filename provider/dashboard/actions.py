"""The dashboard's actions: requeue a dead letter, release a lease, cancel,
delete, prune, and change the flow rules (pause, resume, limit). Off unless
the server starts with --allow-actions; taken only by a user who may act (an
operator, or anyone when the dashboard asks nobody to sign in).

Each is two POSTs to /actions/{name} (app.py): the first, from a page's form
with that page's CSRF token, gets the question and a confirmation bound to
the action, its target and the user (tokens.py); only the second, carrying
that confirmation, acts. Every action taken or refused is logged (audit.py).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from provider.client.plans import Plan
from provider.client.retention import PacedPrune
from provider.dashboard.hub import Hub
from provider.errors import (
    DeadLetterNotFound,
    InstanceEnded,
    InstanceNotFound,
    InstanceRunning,
    NoLeaseHeld,
    StartConflict,
    TaskHubError,
)
from provider.types import PrunedBatch

CSRF_COOKIE = "taskhub_csrf"
CSRF_FIELD = "csrf_token"
CONFIRMATION_FIELD = "confirmation"
CONTROL_FIELDS = (CSRF_FIELD, CONFIRMATION_FIELD)
BAD_INPUT = "22023"

Form = Mapping[str, str]
T = TypeVar("T")


class ActionRefused(Exception):
    """The action cannot be taken as asked (a bad field, nothing to act on):
    nothing changed; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.status = message, status


@dataclass(frozen=True)
class Action:
    name: str
    fields: tuple[str, ...]  # the form fields it needs
    question: Callable[[Form], str]  # asked before acting
    run: Callable[[Hub, Form], str]  # what it did, in words
    needs: tuple[str, ...]  # the hub's functions it calls: a role may take it with all
    optional: tuple[str, ...] = ()  # the fields it may take besides
    check: Callable[[Form], object] = lambda form: None  # a bad field: ActionRefused

    def target(self, form: Form) -> dict[str, str]:
        """What the form asks this action to act on: its own fields, none
        other (the confirmation is bound to exactly these)."""
        known = (*self.fields, *self.optional)
        for name in form:
            if name not in known and name not in CONTROL_FIELDS:
                raise ActionRefused(
                    f"{self.name} takes no field {name[:40]!r} (it takes {', '.join(known)})"
                )
        for name in self.fields:
            _required(form, name)
        self.check(form)  # before the question: it asks only what can be done
        return {name: form[name] for name in known if name in form}


def _required(form: Form, name: str) -> str:
    """The field as sent: an id may begin or end with a space, and the
    action must take the one its page (and its question) named."""
    value = form.get(name) or ""
    if not value.strip():
        raise ActionRefused(f"{name} is required")
    return value


def _refused(error: TaskHubError) -> ActionRefused | None:
    """The hub's refusal of an action, with the HTTP status to answer: nothing
    of that id (404), an instance that ended, or has not ended for a restart,
    or a new id that exists (409), bad input (400)."""
    if isinstance(error, InstanceNotFound | DeadLetterNotFound | NoLeaseHeld):
        return ActionRefused(error.message, status=404)
    if isinstance(error, InstanceEnded | InstanceRunning | StartConflict):
        return ActionRefused(error.message, status=409)
    if error.sqlstate == BAD_INPUT:
        return ActionRefused(error.message, status=400)
    return None


def _run(hub: Hub, plan: Plan[T]) -> T:
    """The plan's result; the hub's refusal of it as ActionRefused."""
    try:
        return hub.run(plan)
    except TaskHubError as error:
        refused = _refused(error)
        if refused is None:
            raise
        raise refused from None


def _requeue(hub: Hub, form: Form) -> str:
    dead_letter = _number(form, "dead_letter_id", DEAD_LETTER_ID)
    new_id = _run(hub, hub.plans.requeue_dead_letter(dead_letter))
    return f"dead letter {dead_letter} is back on its queue as message {new_id}"


def _release(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    _run(hub, hub.plans.release_lease(instance_id))
    return f"the orchestration lease of {instance_id} is released"


def _existing(hub: Hub, instance_id: str) -> None:
    if not hub.run(hub.plans.instance_exists(instance_id)):
        raise ActionRefused(f"instance {instance_id} not found", status=404)


def _cancel(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    reason = form.get("reason") or "cancelled from the dashboard"
    # The hub builds the CancelInstance (taskhub_cancel_instance): no raw message.
    _run(hub, hub.plans.cancel(instance_id, reason))
    return f"instance {instance_id} is asked to cancel (its runtime ends it at its next turn)"


def _restart(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    new_id = (form.get("new_instance_id") or "").strip() or None
    execution = form.get("execution_id")
    done = _run(
        hub,
        hub.plans.restart(
            instance_id,
            new_instance_id=new_id,
            reason=form.get("reason") or "restarted from the dashboard",
            # The execution the page showed ended: a second click does nothing.
            execution_id=_number(form, "execution_id", "an execution's number")
            if execution
            else None,
        ),
    )
    into = (
        f"as {done.new_instance_id}"
        if done.new_instance_id != instance_id
        else f"as its execution {done.new_execution_id}"
    )
    if done.repeated:
        return f"instance {instance_id} was restarted {into} already: nothing done"
    return f"instance {instance_id} restarted {into} (it had {done.from_status.lower()})"


def _delete(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    _existing(hub, instance_id)
    deleted = hub.calls.delete_instance(instance_id, force=form.get("force") == "yes")
    counts = ", ".join(f"{key.replace('_', ' ')} {n}" for key, n in vars(deleted).items())
    return f"instance {instance_id} deleted: {counts}"


# Digits only (ASCII: str.isdigit also takes '²', which int() refuses), and
# few enough for a bigint.
NUMBER = re.compile(r"[0-9]{1,15}")
DEAD_LETTER_ID = "a dead letter's id"


def _number(form: Form, name: str, what: str) -> int:
    value = _required(form, name)
    if not NUMBER.fullmatch(value):
        raise ActionRefused(f"{name} must be {what}, digits 0-9 only, not {value[:40]!r}")
    return int(value)


def _days(form: Form) -> int:
    days = _number(form, "older_than_days", "a whole number of days (0: all ended so far)")
    if days > MAX_DAYS:
        raise ActionRefused(f"older_than_days is at most {MAX_DAYS}")
    return days


MAX_DAYS = 100_000  # further back than any instance, and than time.time() reaches


# What one prune from the dashboard deletes at most, in batches paced as
# `taskhub-pg prune` paces them by default (provider/client/retention.py).
PRUNE_AT_MOST = 1_000


def _prune(hub: Hub, form: Form) -> str:
    days = _days(form)
    before_ms = int((time.time() - days * 86_400) * 1000)
    prune = PacedPrune(
        hub.calls.prune_ended,
        before_ms,
        limit=PRUNE_AT_MOST,
        dispatch_lag_ms=hub.calls.dispatch_lag_ms,
    )
    total = sum(prune, PrunedBatch())
    counts = ", ".join(f"{key.replace('_', ' ')} {n}" for key, n in vars(total).items())
    done = f"ended instances older than {days} days pruned (at most 1,000): {counts}"
    return f"{done}; {prune.stopped_busy}" if prune.stopped_busy else done


def _pause_schedule(hub: Hub, form: Form) -> str:
    name = _required(form, "name")
    was = _run(hub, hub.plans.pause_schedule(name))
    return f"schedule {name} {'was already paused' if was else 'paused'}"


def _resume_schedule(hub: Hub, form: Form) -> str:
    name = _required(form, "name")
    was = _run(hub, hub.plans.resume_schedule(name))
    if not was:
        return f"schedule {name} was not paused"
    return f"schedule {name} resumed (ticks that fell while it was paused never start)"


# Flow rules (docs/flow-control.md): a key is a kind and a name.
FLOW_KINDS = ("activity", "label", "label_each", "orchestration")
MAX_RUNNING = 10_000


def _flow_key(form: Form) -> tuple[str, str]:
    kind, name = _required(form, "kind"), _required(form, "name")
    if kind not in FLOW_KINDS:
        raise ActionRefused(f"kind must be one of {', '.join(FLOW_KINDS)}, not {kind[:40]!r}")
    return kind, name


def _flow_words(kind: str, name: str) -> str:
    return f"each value of label {name}" if kind == "label_each" else f"{kind} {name}"


def _max_running(form: Form) -> int:
    limit = _number(form, "max_running", "a whole number from 1 to 10000")
    if not 1 <= limit <= MAX_RUNNING:
        raise ActionRefused(f"max_running is a whole number from 1 to {MAX_RUNNING}")
    return limit


def _flow_reason(form: Form) -> str:
    return form.get("reason") or "from the dashboard"


def _pause(hub: Hub, form: Form) -> str:
    kind, name = _flow_key(form)
    if kind == "label_each":
        raise ActionRefused("a label's values are limited, not paused: pause one value (label)")
    plans, reason = hub.plans, _flow_reason(form)
    pause = {
        "activity": plans.pause_activity,
        "label": plans.pause_label,
        "orchestration": plans.pause_orchestration,
    }[kind]
    was = _run(hub, pause(name, reason=reason))
    return f"{_flow_words(kind, name)} {'was already paused' if was else 'paused'}"


def _resume(hub: Hub, form: Form) -> str:
    kind, name = _flow_key(form)
    plans, reason = hub.plans, _flow_reason(form)
    resume = {
        "activity": plans.resume_activity,
        "orchestration": plans.resume_orchestration,
    }.get(kind, plans.resume_label)
    was = _run(hub, resume(name, reason=reason))
    return f"{_flow_words(kind, name)} {'resumed' if was else 'was not paused'}"


def _limit(hub: Hub, form: Form) -> str:
    kind, name = _flow_key(form)
    limit, plans, reason = _max_running(form), hub.plans, _flow_reason(form)
    if kind == "activity":
        before = _run(hub, plans.set_activity_limit(name, limit, reason=reason))
    elif kind == "orchestration":
        before = _run(hub, plans.set_orchestration_limit(name, limit, reason=reason))
    else:
        each = kind == "label_each"
        before = _run(hub, plans.set_label_limit(name, limit, each_value=each, reason=reason))
    was = "no limit" if before is None else str(before)
    return f"{_flow_words(kind, name)}: at most {limit} running (was {was})"


def _unlimit(hub: Hub, form: Form) -> str:
    kind, name = _flow_key(form)
    plans, reason = hub.plans, _flow_reason(form)
    if kind == "activity":
        before = _run(hub, plans.remove_activity_limit(name, reason=reason))
    elif kind == "orchestration":
        before = _run(hub, plans.remove_orchestration_limit(name, reason=reason))
    else:
        each = kind == "label_each"
        before = _run(hub, plans.remove_label_limit(name, each_value=each, reason=reason))
    return f"{_flow_words(kind, name)}: {'had no limit' if before is None else 'no limit now'}"


ACTIONS: dict[str, Action] = {
    action.name: action
    for action in (
        Action(
            "requeue",
            ("dead_letter_id",),
            lambda f: f"Put dead letter {f.get('dead_letter_id')} back on its queue?",
            _requeue,
            ("taskhub_requeue_dead_letter",),
            check=lambda f: _number(f, "dead_letter_id", DEAD_LETTER_ID),
        ),
        Action(
            "release-lease",
            ("instance_id",),
            lambda f: (
                f"Release the orchestration lease of {f.get('instance_id')}?"
                " Its holder's turn will be refused when it acks."
            ),
            _release,
            ("taskhub_release_orchestration_lease",),
        ),
        Action(
            "cancel",
            ("instance_id",),
            lambda f: f"Cancel instance {f.get('instance_id')}?",
            _cancel,
            ("taskhub_cancel_instance",),
            optional=("reason",),
        ),
        Action(
            "restart",
            ("instance_id",),
            lambda f: (
                f"Restart instance {f.get('instance_id')}"
                + (
                    f" as {f.get('new_instance_id')}"
                    if (f.get("new_instance_id") or "").strip()
                    else " under its own id (its next execution)"
                )
                + "? It runs again from the input it last ran with."
            ),
            _restart,
            ("taskhub_restart_instance",),
            optional=("execution_id", "new_instance_id", "reason"),
        ),
        Action(
            "delete",
            ("instance_id",),
            lambda f: (
                f"Delete instance {f.get('instance_id')} with its sub-orchestrations,"
                " history and messages?"
            ),
            _delete,
            ("taskhub_find_instances", "list_children", "delete_instances_atomic"),
            optional=("force",),
        ),
        Action(
            "schedule-pause",
            ("name",),
            lambda f: (
                f"Pause schedule {f.get('name')}? None of its ticks starts until it is resumed."
            ),
            _pause_schedule,
            ("taskhub_pause_schedule",),
        ),
        Action(
            "schedule-resume",
            ("name",),
            lambda f: (
                f"Resume schedule {f.get('name')}? Its next tick starts; those that fell"
                " while it was paused never do."
            ),
            _resume_schedule,
            ("taskhub_pause_schedule",),
        ),
        Action(
            "prune",
            ("older_than_days",),
            lambda f: (
                f"Delete the ended instances that completed more than"
                f" {f.get('older_than_days')} days ago?"
            ),
            _prune,
            ("taskhub_prune_ended",),
            check=_days,
        ),
        Action(
            "flow-pause",
            ("kind", "name"),
            lambda f: (
                f"Pause {_flow_words(f.get('kind', ''), f.get('name', ''))}? None of its items"
                " is handed out, to any worker or runtime, until it is resumed."
            ),
            _pause,
            ("taskhub_pause_flow",),
            optional=("reason",),
            check=_flow_key,
        ),
        Action(
            "flow-resume",
            ("kind", "name"),
            lambda f: f"Resume {_flow_words(f.get('kind', ''), f.get('name', ''))}?",
            _resume,
            ("taskhub_resume_flow",),
            optional=("reason",),
            check=_flow_key,
        ),
        Action(
            "flow-limit",
            ("kind", "name", "max_running"),
            lambda f: (
                f"Let at most {f.get('max_running')} items of"
                f" {_flow_words(f.get('kind', ''), f.get('name', ''))} run at once, over the"
                " whole hub?"
            ),
            _limit,
            ("taskhub_set_flow_limit",),
            optional=("reason",),
            check=lambda f: (_flow_key(f), _max_running(f)),
        ),
        Action(
            "flow-remove-limit",
            ("kind", "name"),
            lambda f: f"Remove the limit of {_flow_words(f.get('kind', ''), f.get('name', ''))}?",
            _unlimit,
            ("taskhub_remove_flow_limit",),
            optional=("reason",),
            check=_flow_key,
        ),
    )
}


def permitted(hub: Hub) -> set[str]:
    """The actions the dashboard's role may take: those whose every function
    it may execute."""
    needed = sorted({function for action in ACTIONS.values() for function in action.needs})
    allowed = hub.run(hub.plans.executable(needed))
    return {name for name, action in ACTIONS.items() if set(action.needs) <= allowed}
