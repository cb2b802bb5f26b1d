"""taskhub-pg pause | resume | limit set | rate | remove | remove-rate | list: flow
control from the command line (provider/client/flow_control.py), by activity
(--activity NAME), by label (--label tenant=acme) or for each value of a
label (--each-label tenant, limits only). The hub's fetches enforce the
rules, so every runtime obeys them; each change is kept with the login that
made it and why (taskhub_flow_changes)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Annotated

import typer

from provider.cli.app_session import app_client
from provider.cli.options import (
    AsJson,
    Schema,
    Url,
    fail,
    print_json,
    print_rows,
    say,
)
from provider.inert_text import visible

limit_app = typer.Typer(
    help="Fleet-wide concurrency and rate limits per activity or label, enforced by the hub's"
    " fetches.",
    no_args_is_help=True,
)
Activity = Annotated[
    str | None,
    typer.Option("--activity", metavar="NAME", help="an activity, by its registered name"),
]
Label = Annotated[
    str | None,
    typer.Option(
        "--label",
        metavar="KEY=VALUE",
        help="the items of the instances started with this label",
    ),
]
EachLabel = Annotated[
    str | None,
    typer.Option(
        "--each-label",
        metavar="KEY",
        help="each value of this label its own limit (per tenant: --each-label tenant)",
    ),
]


Orchestration = Annotated[
    str | None,
    typer.Option(
        "--orchestration",
        metavar="NAME",
        help="the turns of the orchestration's instances (not its activities)",
    ),
]


@dataclass(frozen=True)
class Key:
    """What a rule is about: one of --activity, --label, --each-label, --orchestration."""

    kind: str  # activity, label, label_each, orchestration
    name: str

    def __str__(self) -> str:
        name = visible(self.name)  # as typed, but no control character reaches the terminal
        if self.kind == "label_each":
            return f"each value of label {name}"
        return f"{self.kind} {name}"


def key_of(
    activity: str | None,
    label: str | None,
    each_label: str | None = None,
    orchestration: str | None = None,
    *,
    each_allowed: bool = False,
    orchestration_allowed: bool = False,
) -> Key:
    allowed = [("activity", "--activity", activity), ("label", "--label", label)]
    if each_allowed:
        allowed.append(("label_each", "--each-label", each_label))
    if orchestration_allowed:
        allowed.append(("orchestration", "--orchestration", orchestration))
    given = [Key(kind, name) for kind, _, name in allowed if name is not None]
    if len(given) != 1:
        options = [option for _, option, _ in allowed]
        fail(2, f"name exactly one of {', '.join(options[:-1])} or {options[-1]}")
    return given[0]


Reason = Annotated[
    str | None, typer.Option(help="why, kept with the change (taskhub_flow_changes)")
]


@limit_app.command("set")
def set_limit(
    max_running: Annotated[
        int,
        typer.Argument(
            metavar="MAX_RUNNING", min=1, max=10_000, help="at most this many (1-10000)"
        ),
    ],
    activity: Activity = None,
    label: Label = None,
    each_label: EachLabel = None,
    orchestration: Orchestration = None,
    reason: Reason = None,
    url: Url = None,
    schema: Schema = "public",
) -> None:
    """Let at most MAX_RUNNING of the key's items (an orchestration: its
    turns) run at once, over every worker and runtime of the hub (a lowered
    limit lets those running finish)."""
    key = key_of(
        activity, label, each_label, orchestration, each_allowed=True, orchestration_allowed=True
    )
    with app_client(url, schema) as client:
        if key.kind == "activity":
            before = client.set_activity_limit(key.name, max_running, reason=reason)
        elif key.kind == "orchestration":
            before = client.set_orchestration_limit(key.name, max_running, reason=reason)
        else:
            each = key.kind == "label_each"
            before = client.set_label_limit(key.name, max_running, each_value=each, reason=reason)
    was = "no limit" if before is None else f"{before}"
    # An orchestration's limit holds its turns, not its instances in progress.
    what = "turns at once" if key.kind == "orchestration" else "running"
    say(f"{key}: at most {max_running} {what} (was {was})")


@limit_app.command("remove")
def remove_limit(
    activity: Activity = None,
    label: Label = None,
    each_label: EachLabel = None,
    orchestration: Orchestration = None,
    reason: Reason = None,
    url: Url = None,
    schema: Schema = "public",
) -> None:
    """Remove the key's limit (a pause stays)."""
    key = key_of(
        activity, label, each_label, orchestration, each_allowed=True, orchestration_allowed=True
    )
    with app_client(url, schema) as client:
        if key.kind == "activity":
            before = client.remove_activity_limit(key.name, reason=reason)
        elif key.kind == "orchestration":
            before = client.remove_orchestration_limit(key.name, reason=reason)
        else:
            each = key.kind == "label_each"
            before = client.remove_label_limit(key.name, each_value=each, reason=reason)
    say(f"{key}: {'had no limit' if before is None else 'no limit now'}")


@limit_app.command("rate")
def set_rate(
    per_second: Annotated[
        float,
        typer.Argument(
            metavar="PER_SECOND", min=0.001, max=100_000, help="at most this many a second"
        ),
    ],
    burst: Annotated[
        int | None,
        typer.Option(
            min=1, max=100_000, help="at most this many at once (default: a second's worth)"
        ),
    ] = None,
    activity: Activity = None,
    label: Label = None,
    reason: Reason = None,
    url: Url = None,
    schema: Schema = "public",
) -> None:
    """Hand out at most PER_SECOND of the key's items a second, over every
    worker and runtime of the hub, with bursts up to --burst."""
    key = key_of(activity, label)
    with app_client(url, schema) as client:
        if key.kind == "activity":
            before = client.set_activity_rate(key.name, per_second, burst=burst, reason=reason)
        else:
            before = client.set_label_rate(key.name, per_second, burst=burst, reason=reason)
    was = "no rate limit" if before is None else f"{before:g}/s"
    say(f"{key}: at most {per_second:g} a second (was {was})")


@limit_app.command("remove-rate")
def remove_rate(
    activity: Activity = None,
    label: Label = None,
    reason: Reason = None,
    url: Url = None,
    schema: Schema = "public",
) -> None:
    """Remove the key's rate limit (a pause or a concurrency limit stays)."""
    key = key_of(activity, label)
    with app_client(url, schema) as client:
        if key.kind == "activity":
            before = client.remove_activity_rate(key.name, reason=reason)
        else:
            before = client.remove_label_rate(key.name, reason=reason)
    say(f"{key}: {'had no rate limit' if before is None else 'no rate limit now'}")


@limit_app.command("list")
def list_rules(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
    """Every flow rule: paused or not, its limit and how many run now, its
    rate, and the latest change (who, when, why)."""
    with app_client(url, schema) as client:
        rules = client.flow_rules()
    if as_json:
        print_json([asdict(rule) for rule in rules])
        return
    print_rows(
        "flow rules",
        [
            {
                "kind": rule.kind,
                "name": rule.name,
                "paused": "yes" if rule.paused else "no",
                # An orchestration's rule holds its turns, no activity.
                "running": rule.running if rule.kind != "orchestration" else "",
                "turns": rule.turns if rule.kind != "activity" else "",
                "limit": "" if rule.max_running is None else rule.max_running,
                "per second": "" if rule.per_second is None else f"{rule.per_second:g}",
                "burst": "" if rule.burst is None else rule.burst,
                "changed by": rule.changed_by,
                "why": rule.reason or "",
                "changed at": rule.changed_at,
            }
            for rule in rules
        ],
    )


def register(app: typer.Typer) -> None:
    app.add_typer(limit_app, name="limit")

    @app.command()
    def pause(
        activity: Activity = None,
        label: Label = None,
        orchestration: Orchestration = None,
        reason: Reason = None,
        url: Url = None,
        schema: Schema = "public",
    ) -> None:
        """Hand out none of the activity's (or label's) items, or none of the
        orchestration's turns, to any worker or runtime, until `taskhub-pg
        resume`; those running finish."""
        key = key_of(activity, label, None, orchestration, orchestration_allowed=True)
        with app_client(url, schema) as client:
            if key.kind == "activity":
                was_paused = client.pause_activity(key.name, reason=reason)
            elif key.kind == "orchestration":
                was_paused = client.pause_orchestration(key.name, reason=reason)
            else:
                was_paused = client.pause_label(key.name, reason=reason)
        say(f"{key} {'was already paused' if was_paused else 'paused'}")

    @app.command()
    def resume(
        activity: Activity = None,
        label: Label = None,
        orchestration: Orchestration = None,
        reason: Reason = None,
        url: Url = None,
        schema: Schema = "public",
    ) -> None:
        """Hand out the activity's (or label's) items, or the orchestration's
        turns, again, in order."""
        key = key_of(activity, label, None, orchestration, orchestration_allowed=True)
        with app_client(url, schema) as client:
            if key.kind == "activity":
                was_paused = client.resume_activity(key.name, reason=reason)
            elif key.kind == "orchestration":
                was_paused = client.resume_orchestration(key.name, reason=reason)
            else:
                was_paused = client.resume_label(key.name, reason=reason)
        say(f"{key} {'resumed' if was_paused else 'was not paused'}")
