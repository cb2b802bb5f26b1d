"""Presenting benchmark results: a table, a JSON document and a plot."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB

Metrics = dict[str, float]

THROUGHPUT_KEYS = ("turns_per_s", "activities_per_s", "orchestrations_per_s")


@dataclass
class Comparison:
    """One scenario: the median metrics of each schema, and what is expected."""

    scenario: str
    headline: str  # the metric the ratio and the target are about
    figures: dict[str, Metrics] = field(default_factory=dict)
    target_ratio: float | None = None
    checks: dict[str, bool] = field(default_factory=dict)
    note: str = ""

    def ratio(self) -> float | None:
        ours = self.figures.get(TASKHUB.name, {}).get(self.headline)
        theirs = self.figures.get(DUROXIDE_0_2_2.name, {}).get(self.headline)
        if ours is None or not theirs:
            return None
        return ours / theirs

    def met(self) -> bool:
        ratio = self.ratio()
        ratio_ok = self.target_ratio is None or (ratio is not None and ratio >= self.target_ratio)
        return ratio_ok and all(self.checks.values())


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) < 1e6 else f"{value:,.0f}"


def print_table(comparisons: list[Comparison], ceiling_per_s: float) -> None:
    header = (
        f"{'scenario':<64} {'metric':<22} {'taskhub-pg':>11} {'dx 0.2.2':>10} "
        f"{'ratio':>7} {'of ceiling':>10}  target"
    )
    print()
    print(header)
    print("-" * len(header))
    for c in comparisons:
        ratio = c.ratio()
        ours = c.figures.get(TASKHUB.name, {})
        theirs = c.figures.get(DUROXIDE_0_2_2.name, {})
        fraction = ""
        if c.headline in THROUGHPUT_KEYS and ours.get(c.headline):
            fraction = f"{100 * ours[c.headline] / ceiling_per_s:.1f}%"
        target = f">= {c.target_ratio:.1f}x" if c.target_ratio is not None else ""
        target += "".join(f"; {name}" for name in c.checks)
        verdict = "MET" if c.met() else "NOT MET"
        print(
            f"{c.scenario:<64} {c.headline:<22} {_cell(ours.get(c.headline)):>11} "
            f"{_cell(theirs.get(c.headline)):>10} "
            f"{(f'{ratio:.2f}x' if ratio else '-'):>7} {fraction:>10}  {verdict} ({target})"
        )
        for metric in sorted(set(ours) | set(theirs)):
            if metric != c.headline:
                print(
                    f"{'':<64} {metric:<22} {_cell(ours.get(metric)):>11} "
                    f"{_cell(theirs.get(metric)):>10}"
                )
    print(f"\nceiling (plain-table claim-and-delete, same client): {ceiling_per_s:,.0f} claims/s")


def save_json(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2, default=str))


def save_plot(path: Path, comparisons: list[Comparison], extras: dict[str, Any]) -> None:
    # matplotlib is optional (the `bench` extra): imported here, where it draws.
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install '.[bench]')")
        return
    figure, (ratios, depth, history) = plt.subplots(1, 3, figsize=(16, 5))
    rated = [c for c in comparisons if c.ratio() is not None]
    names = [c.scenario.split(" (")[0] for c in rated]
    values = [c.ratio() or 0.0 for c in rated]
    ratios.barh(names, values, color=["tab:green" if c.met() else "tab:red" for c in rated])
    ratios.axvline(1.0, color="black", linewidth=0.8)
    ratios.set_xlabel("taskhub-pg / duroxide 0.2.2 (headline metric)")
    ratios.set_title("side by side, same server, same run")
    for axis, key, label in (
        (depth, "queue_depth", "queued messages"),
        (history, "history_events", "history events"),
    ):
        points = extras["growth"][key]
        sizes = sorted(points)
        axis.plot(sizes, [points[s]["fetch_p50_ms"] for s in sizes], marker="o", label="p50")
        axis.plot(sizes, [points[s]["fetch_p99_ms"] for s in sizes], marker="o", label="p99")
        axis.set_xscale("log")
        axis.set_xlabel(label)
        axis.set_ylabel("fetch latency (ms)")
        axis.set_title(f"taskhub-pg fetch vs {label}")
        axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
