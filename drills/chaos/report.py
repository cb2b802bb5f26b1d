"""The side-by-side table of a chaos run."""

from __future__ import annotations

from drills.chaos.runner import ChaosReport, SideReport

LABEL_WIDTH = 48
COLUMN_WIDTH = 16
TOP_MESSAGES = 3


def format_report(report: ChaosReport) -> str:
    s = report.settings
    sides = report.sides
    restarts = "-" if report.restarts is None else str(report.restarts)
    rows: list[tuple[str, list[str]]] = [
        ("orchestrations", [str(r.outcome.orchestrations) for r in sides]),
        ("completed with the expected output", [str(r.outcome.completed) for r in sides]),
        ("failed", [str(r.outcome.failed) for r in sides]),
        ("completed with a wrong output", [str(r.outcome.wrong_output) for r in sides]),
        ("unfinished", [str(r.outcome.unfinished) for r in sides]),
        ("executions with history gaps", [str(r.outcome.history_gaps) for r in sides]),
        (
            "rows left in orchestrator_queue",
            [str(r.outcome.orchestrator_queue_rows) for r in sides],
        ),
        ("rows left in worker_queue", [str(r.outcome.worker_queue_rows) for r in sides]),
        ("rows in dead_letters", [_optional(r.outcome.dead_letters) for r in sides]),
        (
            "failure acks given back (shielded_failures)",
            [_optional(r.outcome.shielded_failures) for r in sides],
        ),
        ("faults: immediate restarts (shared)", [restarts for _ in sides]),
    ]
    for fault in sides[0].faults:
        rows.append((f"faults: {fault}", [str(r.faults.get(fault, 0)) for r in sides]))
    for pattern in sides[0].runtime_log:
        rows.append((f"runtime log: {pattern}", [str(r.runtime_log[pattern]) for r in sides]))
    rows.append(("all done after (s from the first fault)", [_seconds(r) for r in sides]))

    lines = [
        f"chaos: {s.orchestrations} orchestrations per side, faults for {report.fault_s:.0f} s"
        f" (at most {s.fault_seconds:.0f} s), {report.wall_s:.0f} s in all, seed {s.seed}",
        " " * LABEL_WIDTH + "".join(r.outcome.flavour.rjust(COLUMN_WIDTH) for r in sides),
    ]
    lines += [
        label.ljust(LABEL_WIDTH) + "".join(v.rjust(COLUMN_WIDTH) for v in values)
        for label, values in rows
    ]
    for side in sides:
        for message, count in side.outcome.failure_messages.most_common(TOP_MESSAGES):
            lines.append(f"{side.outcome.flavour} failed x{count}: {message}")
        lines += [f"{side.outcome.flavour}: {example}" for example in side.outcome.examples]
        if side.outcome.unfinished:
            # Why it stalled: what the runtime saw most, and who waits on whom.
            lines += [f"{side.outcome.flavour} logged x{n}: {w}" for w, n in side.warnings]
            lines += [f"{side.outcome.flavour} at the end: {b}" for b in side.blocked]
    lines.append("schemas: " + ", ".join(r.outcome.schema for r in sides))
    return "\n".join(lines)


def _optional(value: int | None) -> str:
    return "-" if value is None else str(value)


def _seconds(side: SideReport) -> str:
    return "never" if side.finished_s is None else f"{side.finished_s:.1f}"
