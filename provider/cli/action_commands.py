"""The runbook's actions: requeue, release-lease, prune, delete-instance."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from typing import Annotated

import typer

from provider.cli.failures import end_on_refusal
from provider.cli.hubs import hub_session
from provider.cli.options import (
    NOT_FOUND,
    PROBLEMS,
    USAGE,
    AsJson,
    Schema,
    Url,
    Yes,
    confirm,
    database_url,
    errors,
    fail,
    print_counts,
    print_json,
    say,
)
from provider.client.pooling import ONE_SHOT_POOLER
from provider.client.retention import MAX_PRUNE_BATCH, PacedPrune, PrunePacing
from provider.client.task_hub import TaskHub
from provider.errors import TaskHubError
from provider.moments import EXAMPLE, parse_moment
from provider.types import PrunedBatch


def cutoff_ms(when: str) -> int:
    """'30d', '12h', '45m', '90s' ago, or an ISO 8601 time: epoch milliseconds."""
    try:
        return int(parse_moment(when).timestamp() * 1000)
    except ValueError as error:
        fail(USAGE, str(error), EXAMPLE)


# delete_instances_atomic's refusal names its argument; the CLI names its flag.
CONTRACT_FORCE = "Use force=true to delete."
CLI_FORCE = "Add --force to delete it while it runs."
# The prune's defaults: the library's (docs/ops.md, "Retention").
PACING = PrunePacing()
# How many candidates a prune without --limit counts before it asks ("N or more").
COUNT_AT_MOST = 100_000


def prune_in_batches(
    hub: TaskHub, before_ms: int, limit: int | None, pacing: PrunePacing, as_json: bool
) -> tuple[PrunedBatch, str | None]:
    """A paced prune with a progress line on stderr after each batch (a JSON
    object under --json): what it deleted, and why it stopped early if the
    hub stayed busy."""
    prune = PacedPrune(
        hub.prune_ended, before_ms, limit=limit, pacing=pacing, dispatch_lag_ms=hub.dispatch_lag_ms
    )
    total, started = PrunedBatch(), time.monotonic()
    for number, batch in enumerate(prune, start=1):
        if number == 1 and prune.busy_check_off:
            errors.print(prune.busy_check_off, highlight=False)
        total += batch
        elapsed = max(time.monotonic() - started, 1e-6)
        rate = total.roots_deleted / elapsed
        if as_json:
            progress = {"batch": number, **vars(total), "seconds": round(elapsed, 3)}
            sys.stderr.write(json.dumps({**progress, "roots_per_s": round(rate, 1)}) + "\n")
        else:
            errors.print(
                f"batch {number}: {total.roots_deleted:,} roots so far"
                f" ({total.instances_deleted:,} instances, {total.events_deleted:,} events)"
                f" in {elapsed:.1f} s, {rate:,.0f} roots/s",
                highlight=False,
            )
    return total, prune.stopped_busy


def register(app: typer.Typer) -> None:
    @app.command()
    def requeue(
        dead_letter_id: Annotated[int, typer.Argument(metavar="DEAD_LETTER_ID")],
        url: Url = None,
        schema: Schema = "public",
        as_json: AsJson = False,
    ) -> None:
        """Put a dead letter back on its queue as a fresh message (attempt 0)."""
        with hub_session(database_url(url), schema) as hub:
            try:
                new_id = hub.run(hub.plans.requeue_dead_letter(dead_letter_id))
            except TaskHubError as error:
                end_on_refusal(error)
                raise
        if as_json:
            print_json({"dead_letter_id": dead_letter_id, "queued_as": new_id})
        else:
            say(f"dead letter {dead_letter_id} queued again as message {new_id}")

    @app.command("release-lease")
    def release_lease(
        instance_id: Annotated[str, typer.Argument(metavar="INSTANCE")],
        url: Url = None,
        schema: Schema = "public",
        activities: Annotated[
            bool,
            typer.Option(
                "--activities", help="release the instance's activity leases instead, each at once"
            ),
        ] = False,
        as_json: AsJson = False,
    ) -> None:
        """Release an orchestration lease whose holder is gone: its messages are
        ready again at once, the holder's late ack is refused. With
        --activities, the leases of the instance's activities whose worker is
        gone: each item is ready again at once."""
        with hub_session(database_url(url), schema) as hub:
            try:
                if activities:
                    released = hub.run(hub.plans.release_activity_leases(instance_id))
                else:
                    hub.run(hub.plans.release_lease(instance_id))
            except TaskHubError as error:
                end_on_refusal(error)
                raise
        if activities:
            if as_json:
                print_json({"instance_id": instance_id, "activity_leases_released": released})
            else:
                say(f"released {released} activity lease(s) of {instance_id}")
        elif as_json:
            print_json({"instance_id": instance_id, "released": True})
        else:
            say(f"released the orchestration lease of {instance_id}")

    @app.command()
    def prune(
        completed_before: Annotated[
            str, typer.Option(help="ended before: 30d, 12h, ... ago, or an ISO 8601 time")
        ],
        url: Url = None,
        schema: Schema = "public",
        limit: Annotated[
            int | None,
            typer.Option(min=1, help="at most this many root instances (default: all of them)"),
        ] = None,
        batch_size: Annotated[
            int,
            typer.Option(
                min=1,
                max=MAX_PRUNE_BATCH,
                help="the most root instances in one batch",
            ),
        ] = PACING.max_batch,
        batch_seconds: Annotated[
            float,
            typer.Option(
                min=0.0, max=60.0, help="size each batch to take about this long (0: --batch-size)"
            ),
        ] = PACING.batch_seconds,
        pause_seconds: Annotated[
            float, typer.Option(min=0.0, max=3600.0, help="pause after each batch")
        ] = PACING.pause_seconds,
        busy_lag: Annotated[
            int,
            typer.Option(
                min=0,
                metavar="MS",
                help="wait while the oldest ready message has waited longer than this (0: never)",
            ),
        ] = PACING.busy_lag_ms,
        busy_wait: Annotated[
            float,
            typer.Option(
                min=0.0, max=86400.0, help="seconds to wait for a busy hub before stopping"
            ),
        ] = PACING.busy_wait_seconds,
        yes: Yes = False,
        as_json: AsJson = False,
    ) -> None:
        """Delete ended root instances (with their sub-orchestrations) that
        completed before a time, oldest first, batch after batch until none is
        left (or --limit); running instances stay. Each batch is a short
        transaction that waits for no other session, sized to take about
        --batch-seconds, with --pause-seconds after it; while the hub's
        dispatchers are behind by more than --busy-lag ms the prune waits, and
        after --busy-wait seconds it stops (exit 0, what it did is kept). It
        says on stderr how far it has got."""
        before_ms, target = cutoff_ms(completed_before), database_url(url)
        counted = limit if limit is not None else COUNT_AT_MOST
        with hub_session(target, schema) as operator:
            candidates = operator.run(operator.plans.count_prune_candidates(before_ms, counted))
        if candidates == 0:
            print_counts({"instances_deleted": 0}, as_json)
            return
        pacing = PrunePacing(batch_seconds, batch_size, pause_seconds, busy_lag, busy_wait)
        more = " or more" if limit is None and candidates >= counted else ""
        confirm(f"Delete {candidates}{more} ended instances and their histories?", yes)
        with TaskHub.connect(target, schema, pool_min_size=1, pooler=ONE_SHOT_POOLER) as hub:
            total, stopped_busy = prune_in_batches(hub, before_ms, limit, pacing, as_json)
        counts: dict[str, int | str] = dataclasses.asdict(total)
        counts["roots_deleted"] = counts.pop("roots_deleted")  # the roots last, after the rest
        if stopped_busy:
            errors.print(stopped_busy, highlight=False)
            counts["stopped"] = "hub busy"
        print_counts(counts, as_json)

    @app.command("delete-instance")
    def delete_instance(
        instance_id: Annotated[str, typer.Argument(metavar="ID")],
        url: Url = None,
        schema: Schema = "public",
        force: Annotated[bool, typer.Option(help="delete it even while it runs")] = False,
        yes: Yes = False,
        as_json: AsJson = False,
    ) -> None:
        """Delete a root instance, its sub-orchestrations, history and messages."""
        target = database_url(url)
        with hub_session(target, schema) as operator:
            if not operator.run(operator.plans.instance_exists(instance_id)):
                fail(NOT_FOUND, f"instance {instance_id} not found")
        confirm(f"Delete instance {instance_id} and everything it has?", yes)
        with TaskHub.connect(target, schema, pool_min_size=1, pooler=ONE_SHOT_POOLER) as hub:
            try:
                deleted = hub.delete_instance(instance_id, force=force)
            except TaskHubError as error:
                # The procedure's words are the contract's, in its own terms:
                # here the flag is --force.
                fail(PROBLEMS, error.message.replace(CONTRACT_FORCE, CLI_FORCE))
        print_counts(vars(deleted), as_json)
