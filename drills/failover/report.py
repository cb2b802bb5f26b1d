"""The drill's report: per event what happened to the starts and the work,
then a verdict per target.

Targets: a switchover and a crash with the standby caught up lose no
acknowledged start, give up no start, fail, botch or strand no
orchestration; on the switchover our worker loses no lease; every start a
lagging standby lost is explained by the replication lag. Every event must
have acknowledged starts and completed orders, or it proved nothing.
"""

from __future__ import annotations

from drills.failover.events import CRASH, LAGGING, SWITCHOVER
from drills.failover.outcome import EventOutcome
from drills.harness import Verdict

SHOWN = 5  # examples printed of each kind


def _seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f} s"


def event_lines(outcome: EventOutcome) -> list[str]:
    event = outcome.event
    reruns = ", ".join(f"{name} {count}" for name, count in sorted(outcome.reruns.items()))
    lines = [
        f"{event.name}:",
        f"  starts {outcome.starts}: acknowledged {outcome.acknowledged}"
        f" ({outcome.repeated} after a RetryableError and a repeat with the same id,"
        f" {outcome.repeated_existing} of which found it already there),"
        f" given up {len(outcome.given_up)}",
        f"  orders completed correctly {outcome.completed}, wrong {len(outcome.wrong)},"
        f" failed {len(outcome.failed)}, stuck {len(outcome.stuck)}"
        f" (settled: {'yes' if outcome.settled else 'NO'}),"
        f" acknowledged but lost {len(outcome.lost)}",
        f"  activity re-runs (instances whose activity ran more than once): "
        f"{sum(outcome.reruns.values())}" + (f" ({reruns})" if reruns else ""),
        f"  our worker: leases lost {outcome.worker.leases_lost},"
        f" renewals {outcome.worker.renewals},"
        f" renewal errors retried {outcome.worker.renewal_errors}",
        f"  primary stopped -> standby promoted and proxies repointed {event.outage_s:.2f} s;"
        f" from the event, on the new primary: first start acknowledged"
        f" {_seconds(outcome.first_ack_after_s)},"
        f" first completion {_seconds(outcome.first_completion_after_s)}",
        f"  WAL the standby had not received: {event.unreceived.line()}"
        + (f" (replication stalled {event.stalled_s:g} s)" if event.stalled_s else ""),
        f"  runtime WARN+ lines {len(outcome.runtime_problems)},"
        f" our worker's WARNING+ lines {len(outcome.worker_problems)}",
    ]
    lines += [f"    lost {lost.line()}" for lost in outcome.lost]
    for kind, found in (
        ("given up", outcome.given_up),
        ("wrong", outcome.wrong),
        ("failed", outcome.failed),
        ("stuck", outcome.stuck),
        ("re-run", outcome.rerun_examples),
        ("runtime", outcome.runtime_problems),
        ("worker", outcome.worker_problems),
    ):
        lines += [f"    {kind}: {line[:300]}" for line in found[:SHOWN]]
    return lines


def verdicts(outcome: EventOutcome) -> list[Verdict]:
    name = outcome.event.name
    found = [
        Verdict(
            name,
            outcome.acknowledged > 0 and outcome.completed > 0,
            f"acknowledged starts {outcome.acknowledged}, orders completed {outcome.completed}",
        )
    ]
    if name in (SWITCHOVER, CRASH):
        found += [
            Verdict(
                name,
                not outcome.lost and not outcome.given_up,
                f"acknowledged starts lost: {len(outcome.lost)}, given up: {len(outcome.given_up)}",
            ),
            Verdict(
                name,
                not outcome.failed and not outcome.wrong and not outcome.stuck,
                f"orchestrations failed: {len(outcome.failed)}, wrong: {len(outcome.wrong)},"
                f" stuck: {len(outcome.stuck)}",
            ),
        ]
    if name == SWITCHOVER:
        found.append(
            Verdict(
                name,
                outcome.worker.leases_lost == 0,
                f"leases our worker lost: {outcome.worker.leases_lost}",
            )
        )
    if name == LAGGING:
        unexplained = [lost for lost in outcome.lost if not lost.explained]
        found.append(
            Verdict(
                name,
                not unexplained,
                f"acknowledged starts lost: {len(outcome.lost)},"
                f" not explained by the replication lag: {len(unexplained)}",
            )
        )
    return found
