"""taskhub-pg schedule add | list | pause | resume | remove, and taskhub-pg
scheduler (starts the schedules' ticks until Ctrl-C): the application
client's schedules (provider/client/schedules.py) from the command line."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from typing import Annotated, Any

import typer

from provider.cli.app_session import app_client
from provider.cli.options import (
    USAGE,
    AsJson,
    Schema,
    Url,
    fail,
    print_json,
    print_rows,
    say,
)
from provider.client.scheduler import Scheduler
from provider.types import MissedPolicy

schedule_app = typer.Typer(
    help="Orchestrations started on a schedule; `taskhub-pg scheduler` starts them.",
    no_args_is_help=True,
)
Name = Annotated[str, typer.Argument(metavar="NAME", help="the schedule's name")]


@schedule_app.command("add")
def add(
    name: Name,
    orchestration: Annotated[str, typer.Argument(metavar="ORCHESTRATION")],
    input: Annotated[
        str, typer.Option("--input", help='the input as JSON, e.g. \'{"report": "daily"}\'')
    ] = "null",
    cron: Annotated[
        str | None, typer.Option(help="five-field cron expression, e.g. '0 6 * * 1-5'")
    ] = None,
    every: Annotated[
        int | None, typer.Option(min=1, metavar="SECONDS", help="or: every this many seconds")
    ] = None,
    version: Annotated[str | None, typer.Option(help="the orchestration's version")] = None,
    time_zone: Annotated[str, typer.Option(help="the cron expression's time zone")] = "UTC",
    missed: Annotated[
        str, typer.Option(help="after downtime: skip (start nothing late) or once (the latest)")
    ] = "skip",
    priority: Annotated[
        int, typer.Option(min=0, max=9, help="each tick's priority, 0 to 9 (higher first)")
    ] = 0,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label",
            metavar="KEY=VALUE",
            help="a label of each tick's instance (tenant=acme); repeat for more",
        ),
    ] = None,
    url: Url = None,
    schema: Schema = "public",
    as_json: AsJson = False,
) -> None:
    """Create a schedule, or change the one of that name. Its ticks start
    from now on, each once, as instance schedule:NAME:<tick in UTC>."""
    try:
        value = json.loads(input)
    except ValueError:
        fail(USAGE, "--input must be JSON (a text is quoted: '\"text\"')")
    if missed not in ("skip", "once"):
        fail(USAGE, "--missed must be skip or once")
    policy: MissedPolicy = "skip" if missed == "skip" else "once"
    labels: dict[str, str] = {}
    for text in label or []:
        key, equals, label_value = text.partition("=")
        if not equals or key in labels:
            fail(USAGE, "each --label is KEY=VALUE, one per key (tenant=acme)")
        labels[key] = label_value
    with app_client(url, schema) as client:
        created = client.set_schedule(
            name,
            orchestration,
            value,
            cron=cron,
            every_s=every,
            version=version,
            time_zone=time_zone,
            missed=policy,
            priority=priority,
            labels=labels,
        )
    if as_json:
        print_json({"schedule": name, "created": created})
    else:
        say(f"schedule {name} {'created' if created else 'changed'}")


@schedule_app.command("list")
def list_(url: Url = None, schema: Schema = "public", as_json: AsJson = False) -> None:
    """Every schedule: what it starts, when, whether it is paused, and its
    failed fires in a row with why (the reason it was paused, else the latest
    error)."""
    with app_client(url, schema) as client:
        schedules = client.list_schedules()
    rows: list[dict[str, Any]] = [asdict(schedule) for schedule in schedules]
    if as_json:
        print_json(rows)
        return
    print_rows(
        "schedules",
        [
            {
                "name": row["name"],
                "orchestration": row["orchestration"],
                "when": row["cron"] or f"every {row['every_s']} s",
                # yes / no, as the dashboard shows it (--json keeps the boolean).
                "paused": "yes" if row["paused"] else "no",
                # Before the columns a narrow terminal leaves out first.
                "failures": row["failures"],
                "why": row["paused_reason"] or row["last_error"] or "",
                "time zone": row["time_zone"],
                "missed": row["missed"],
                "priority": row["priority"],
                "labels": " ".join(f"{key}={value}" for key, value in row["labels"].items()),
                "next tick": "" if row["paused"] else row["next_tick"] or "",
                "latest tick": row["last_tick_at"] or "none yet",
            }
            for row in rows
        ],
    )


@schedule_app.command("pause")
def pause(name: Name, url: Url = None, schema: Schema = "public") -> None:
    """Start none of its ticks until it is resumed."""
    with app_client(url, schema) as client:
        was_paused = client.pause_schedule(name)
    say(f"schedule {name} {'was already paused' if was_paused else 'paused'}")


@schedule_app.command("resume")
def resume(name: Name, url: Url = None, schema: Schema = "public") -> None:
    """Start its ticks again, from now on (those that fell while paused never)."""
    with app_client(url, schema) as client:
        was_paused = client.resume_schedule(name)
    say(f"schedule {name} {'resumed' if was_paused else 'was not paused'}")


@schedule_app.command("remove")
def remove(name: Name, url: Url = None, schema: Schema = "public") -> None:
    """Remove the schedule; the instances it started stay."""
    with app_client(url, schema) as client:
        client.remove_schedule(name)
    say(f"schedule {name} removed")


def register(app: typer.Typer) -> None:
    app.add_typer(schedule_app, name="schedule")

    @app.command()
    def scheduler(
        url: Url = None,
        schema: Schema = "public",
        poll: Annotated[
            float, typer.Option(min=0.05, max=3600.0, metavar="SECONDS", help="between passes")
        ] = 0.5,
    ) -> None:
        """Start the schedules' ticks, each once, until Ctrl-C. Run as many as
        you like: they take turns, a tick is started by one of them."""
        with app_client(url, schema) as client, Scheduler(client, poll_s=poll):
            say(f"scheduler running on schema {schema}: Ctrl-C stops it")
            threading.Event().wait()
