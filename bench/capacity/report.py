"""The capacity bench's words and picture: a line a step, each side's
capacity at the objective and their ratio, and p99 against rate."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from bench.capacity.step import SIDES, StepResult
from drills.soak.watch import CPU_ROLES


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}"


def step_line(step: StepResult, objective_ms: float) -> str:
    s = step.settings
    worst = step.worst_p99_ms()
    cpu = max(step.judged(), key=lambda m: sum(m.cpu_percent.values()), default=None)
    roles = (
        ", ".join(f"{role} {cpu.cpu_percent.get(role, 0.0):.0f}%" for role in CPU_ROLES)
        if cpu and cpu.cpu_percent
        else "server CPU unknown"
    )
    verdict = "holds" if step.holds(objective_ms) else "breaks"
    return (
        f"{s.side:<16} {s.rate:>6.0f}/s  completed {step.completed_per_s():>6.1f}/s"
        f"  worst minute's p99 {worst / 1000:>7.2f} s  {verdict}"
        f"  (server CPU, busiest minute: {roles}; start errors {step.start_errors})"
    )


def capacity(steps: list[StepResult], side: str, objective_ms: float) -> float:
    """The highest rate at which the side held the objective, every rate below
    it held too (0: not even the lowest)."""
    held = 0.0
    for step in sorted(
        (s for s in steps if s.settings.side == side), key=lambda s: s.settings.rate
    ):
        if not step.holds(objective_ms):
            break
        held = step.settings.rate
    return held


def summary(steps: list[StepResult], objective_ms: float) -> list[str]:
    ours, theirs = (capacity(steps, side, objective_ms) for side in SIDES)
    ratio = f"{ours / theirs:.1f}x" if theirs else "no rate held by 0.2.2"
    return [
        f"capacity at a {objective_ms:.0f} ms p99 objective (every minute after the warm-up,"
        " completions within 5 % of the rate):",
        f"  {SIDES[0]}: {ours:.0f}/s   {SIDES[1]}: {theirs:.0f}/s   ratio {ratio}",
        f"  machine: {machine()}",
    ]


def plot(steps: list[StepResult], path: Path, objective_ms: float, title: str) -> bool:
    """p99 (worst judged minute) against rate for both sides; False when
    matplotlib is not installed (the bench extra brings it)."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4))
    for side in SIDES:
        mine = sorted((s for s in steps if s.settings.side == side), key=lambda s: s.settings.rate)
        rates = [s.settings.rate for s in mine]
        axes.plot(rates, [s.worst_p99_ms() / 1000 for s in mine], marker="o", label=side)
    axes.axhline(objective_ms / 1000, linestyle="--", color="grey", label="objective")
    axes.set_yscale("log")
    axes.set_xlabel("orchestrations started per second")
    axes.set_ylabel("p99 start to completion (s), worst minute")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return True
