"""The dashboard's actions: requeue a dead letter, release a lease, cancel,
delete, prune. Off unless the server starts with --allow-actions.

Each is a POST to /actions/{name} carrying the CSRF token of its page (the
token is also in a cookie: a form another site posts cannot read it), and
asks first: the first POST renders the question, and only a second one with
`confirmed=yes` acts. Every action taken or refused is logged (logger
provider.dashboard.actions) with what it was asked to do and what it did.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from provider.client.management import prune_batches
from provider.dashboard.hub import Hub
from provider.deploy import runbook
from provider.types import PrunedBatch

log = logging.getLogger("provider.dashboard.actions")

CSRF_COOKIE = "taskhub_csrf"
CSRF_FIELD = "csrf_token"

Form = Mapping[str, str]


class ActionRefused(Exception):
    """The action cannot be taken as asked (a bad field, nothing to act on):
    nothing changed; `status` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.message, self.status = message, status


class CsrfTokens:
    """Tokens of this server process: a nonce signed with a secret of its own,
    so that only a page this server rendered can carry one."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def issue(self) -> str:
        nonce = secrets.token_urlsafe(16)
        return f"{nonce}.{self._sign(nonce)}"

    def valid(self, cookie: str | None, form: str | None) -> bool:
        """The form's token is the cookie's, and this server signed it."""
        if not cookie or not form or not hmac.compare_digest(cookie, form):
            return False
        nonce, _, signature = form.partition(".")
        return bool(nonce) and hmac.compare_digest(signature, self._sign(nonce))

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Action:
    name: str
    fields: tuple[str, ...]  # the form fields it needs (others are optional)
    question: Callable[[Form], str]  # asked before acting
    run: Callable[[Hub, Form], str]  # what it did, in words
    needs: tuple[str, ...]  # the hub's functions it calls: a role may take it with all


def _required(form: Form, name: str) -> str:
    value = (form.get(name) or "").strip()
    if not value:
        raise ActionRefused(f"{name} is required")
    return value


def _requeue(hub: Hub, form: Form) -> str:
    dead_letter = _required(form, "dead_letter_id")
    if not dead_letter.isdigit():
        raise ActionRefused(f"dead_letter_id must be a number, not {dead_letter!r}")
    with hub.connection() as conn:
        try:
            new_id = runbook.requeue_dead_letter(conn, hub.schema, int(dead_letter))
        except runbook.RunbookError as error:
            raise ActionRefused(str(error), status=404) from None
    return f"dead letter {dead_letter} is back on its queue as message {new_id}"


def _release(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    with hub.connection() as conn:
        try:
            runbook.release_lease(conn, hub.schema, instance_id)
        except runbook.RunbookError as error:
            raise ActionRefused(str(error), status=404) from None
    return f"the orchestration lease of {instance_id} is released"


def _existing(hub: Hub, instance_id: str) -> None:
    with hub.connection() as conn:
        if not runbook.instance_exists(conn, hub.schema, instance_id):
            raise ActionRefused(f"instance {instance_id} not found", status=404)


def _cancel(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    reason = form.get("reason") or "cancelled from the dashboard"
    # The hub builds the CancelInstance (taskhub_cancel_instance): no raw message.
    with hub.connection() as conn:
        try:
            runbook.cancel_instance(conn, hub.schema, instance_id, reason)
        except runbook.RunbookError as error:
            status = {3: 404, 2: 400}.get(error.code, 409)
            raise ActionRefused(str(error), status=status) from None
    return f"instance {instance_id} is asked to cancel (its runtime ends it at its next turn)"


def _delete(hub: Hub, form: Form) -> str:
    instance_id = _required(form, "instance_id")
    _existing(hub, instance_id)
    deleted = hub.calls.delete_instance(instance_id, force=form.get("force") == "yes")
    counts = ", ".join(f"{key.replace('_', ' ')} {n}" for key, n in vars(deleted).items())
    return f"instance {instance_id} deleted: {counts}"


def _days(form: Form) -> int:
    days = _required(form, "older_than_days")
    if not days.isdigit():
        raise ActionRefused(
            f"older_than_days must be a whole number of days (0: all ended so far), not {days!r}"
        )
    return int(days)


# What one prune from the dashboard deletes at most, in batches (each a short
# transaction of its own, as `taskhub-pg prune` runs them).
PRUNE_AT_MOST = 1_000


def _prune(hub: Hub, form: Form) -> str:
    days = _days(form)
    before_ms = int((time.time() - days * 86_400) * 1000)
    batches = prune_batches(hub.calls.prune_ended, before_ms, limit=PRUNE_AT_MOST)
    total = sum(batches, PrunedBatch())
    counts = ", ".join(f"{key.replace('_', ' ')} {n}" for key, n in vars(total).items())
    return f"ended instances older than {days} days pruned (at most 1,000): {counts}"


ACTIONS: dict[str, Action] = {
    action.name: action
    for action in (
        Action(
            "requeue",
            ("dead_letter_id",),
            lambda f: f"Put dead letter {f.get('dead_letter_id')} back on its queue?",
            _requeue,
            ("taskhub_requeue_dead_letter",),
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
        ),
    )
}


def permitted(hub: Hub) -> set[str]:
    """The actions the dashboard's role may take: those whose every function
    it may execute."""
    needed = sorted({function for action in ACTIONS.values() for function in action.needs})
    with hub.connection() as conn:
        allowed = runbook.executable(conn, hub.schema, needed)
    return {name for name, action in ACTIONS.items() if set(action.needs) <= allowed}
