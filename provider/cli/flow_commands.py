"""taskhub-pg pause | resume | limit set | rate | remove | remove-rate | list: flow
control from the command line (provider/client/flow_control.py). The hub's
fetches enforce the rules, so every runtime obeys them; each change is kept
with the login that made it and why (taskhub_flow_changes)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated

import typer

from provider.cli.app_session import app_client
from provider.cli.options import (
    AsJson,
    Schema,
    Url,
    print_json,
    print_rows,
    say,
)

limit_app = typer.Typer(
    help="Fleet-wide concurrency and rate limits per activity, enforced by the hub's fetches.",
    no_args_is_help=True,
)
Activity = Annotated[
    str, typer.Option("--activity", metavar="NAME", help="the activity's name, as registered")
]
Reason = Annotated[
    str | None, typer.Option(help="why, kept with the change (taskhub_flow_changes)")
]


@limit_app.command("set")
def set_limit(
    activity: Activity,
    max_running: Annotated[
        int,
        typer.Argument(
            metavar="MAX_RUNNING", min=1, max=10_000, help="at most this many (1-10000)"
        ),
    ],
    reason: Reason = None,
    url: Url = None,
    schema: Schema = "public",
) -> None:
    """Let at most MAX_RUNNING of the activity's items run at once, over every
    worker and runtime of the hub (a lowered limit lets those running finish)."""
    with app_client(url, schema) as client:
        before = client.set_activity_limit(activity, max_running, reason=reason)
    was = "no limit" if before is None else f"{before}"
    say(f"activity {activity}: at most {max_running} running (was {was})")


@limit_app.command("remove")
def remove_limit(
    activity: Activity, reason: Reason = None, url: Url = None, schema: Schema = "public"
) -> None:
    """Remove the activity's limit (a pause stays)."""
    with app_client(url, schema) as client:
        before = client.remove_activity_limit(activity, reason=reason)
    say(f"activity {activity}: {'had no limit' if before is None else 'no limit now'}")


@limit_app.command("rate")
def set_rate(
    activity: Activity,
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
    reason: Reason = None,
    url: Url = None,
    schema: Schema = "public",
) -> None:
    """Hand out at most PER_SECOND of the activity's items a second, over every
    worker and runtime of the hub, with bursts up to --burst."""
    with app_client(url, schema) as client:
        before = client.set_activity_rate(activity, per_second, burst=burst, reason=reason)
    was = "no rate limit" if before is None else f"{before:g}/s"
    say(f"activity {activity}: at most {per_second:g} a second (was {was})")


@limit_app.command("remove-rate")
def remove_rate(
    activity: Activity, reason: Reason = None, url: Url = None, schema: Schema = "public"
) -> None:
    """Remove the activity's rate limit (a pause or a concurrency limit stays)."""
    with app_client(url, schema) as client:
        before = client.remove_activity_rate(activity, reason=reason)
    say(f"activity {activity}: {'had no rate limit' if before is None else 'no rate limit now'}")


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
                rule.kind: rule.name,
                "paused": "yes" if rule.paused else "no",
                "running": rule.running,
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
        activity: Activity, reason: Reason = None, url: Url = None, schema: Schema = "public"
    ) -> None:
        """Hand out none of the activity's items, to any worker or runtime,
        until `taskhub-pg resume`; those running finish."""
        with app_client(url, schema) as client:
            was_paused = client.pause_activity(activity, reason=reason)
        say(f"activity {activity} {'was already paused' if was_paused else 'paused'}")

    @app.command()
    def resume(
        activity: Activity, reason: Reason = None, url: Url = None, schema: Schema = "public"
    ) -> None:
        """Hand out the activity's items again, oldest first."""
        with app_client(url, schema) as client:
            was_paused = client.resume_activity(activity, reason=reason)
        say(f"activity {activity} {'resumed' if was_paused else 'was not paused'}")
