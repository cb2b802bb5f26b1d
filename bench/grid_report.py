"""Presenting the grid: the table with each cell judged, the verdict on each
target of issue 23 (bench.targets), JSON, a heat map."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.targets import (
    ANCHOR,
    END_TO_END_RATIO,
    HOT_RATIO,
    LIGHT_RATIO,
    LIGHT_ROUND_FLOOR,
    MIN_LEASE_LEFT_SHARE,
    Target,
    hot_fetch_targets,
    light_turn_targets,
    print_ratio_table,
    print_targets,
    ratio,
)
from devkit.workloads.flavours import TASKHUB

OURS = TASKHUB.name
Row = dict[str, Any]
# The worker queue is outside issue 23; its target is the one of issue 10.
WORKER_QUEUE_RATIO = 1.1
END_TO_END = "duroxide runtime end to end"
SAFETY_COUNTS = {
    "expired_leases": "expired leases",
    "ack_failures": "ack failures",
    "errors": "errors",
}


def median_ratio(row: Row, flavour: str) -> float:
    figures = row["figures"]
    return ratio(figures[flavour]["turns_per_s"], figures[ANCHOR]["turns_per_s"])


def least_round_ratio(row: Row, flavour: str) -> float:
    return float(min(row["round_ratios"][flavour]))


def cell_checks(row: Row, flavour: str = OURS) -> dict[str, bool]:
    figures = row["figures"][flavour]
    light = row["cell"]["kind"] == "light"
    target = LIGHT_RATIO if light else HOT_RATIO
    checks = {f"ratio >= {target}x": median_ratio(row, flavour) >= target}
    if light:
        checks[f"every round >= {LIGHT_ROUND_FLOOR}x"] = (
            least_round_ratio(row, flavour) >= LIGHT_ROUND_FLOOR
        )
    checks.update({f"no {name}": figures[key] == 0 for key, name in SAFETY_COUNTS.items()})
    checks[f"lease left >= {MIN_LEASE_LEFT_SHARE:.0%}"] = (
        figures["min_lease_left_share"] >= MIN_LEASE_LEFT_SHARE
    )
    return checks


def _cell_line(row: Row, flavour: str) -> str:
    ours, theirs = row["figures"][flavour], row["figures"][ANCHOR]
    missed = [name for name, ok in cell_checks(row, flavour).items() if not ok]
    verdict = "MET" if not missed else f"MISSED ({', '.join(missed)})"
    dx_faults = theirs["errors"] + theirs["ack_failures"] + theirs["expired_leases"]
    return (
        f"{row['label']:<62} {ours['turns_per_s']:7.0f} {theirs['turns_per_s']:7.0f} "
        f"{median_ratio(row, flavour):5.2f}x {least_round_ratio(row, flavour):6.2f}x "
        f"{ours['fetch_p50_ms']:6.1f} {ours['fetch_p99_ms']:7.1f} {ours['fetch_max_ms']:7.1f} "
        f"{ours['min_lease_left_share']:5.0%} {theirs['min_lease_left_share']:7.0%} "
        f"{ours['expired_leases']:4.0f} {ours['ack_failures']:4.0f} {ours['errors']:4.0f} "
        f"{dx_faults:6.0f}  {verdict}"
    )


def print_cells(grid: list[Row], flavour: str) -> None:
    header = (
        f"{'cell (' + flavour + ')':<62} {'/s':>7} {'dx/s':>7} {'ratio':>6} {'min rd':>7} "
        f"{'p50':>6} {'p99':>7} {'max':>7} {'left':>5} {'dx left':>7} {'exp':>4} {'ackf':>4} "
        f"{'err':>4} {'dx err':>6}  verdict"
    )
    print()
    print(header)
    print("-" * len(header))
    for row in grid:
        print(_cell_line(row, flavour))
    print(
        "(ratio: of the medians; min rd: the least ratio of one round; latencies: ms;"
        " left: least lease left at the client, share of the lock; exp/ackf/err and left:"
        " the worst run; dx err: errors + ack failures + expired leases of 0.2.2)"
    )


def print_side_scenarios(side: dict[str, dict[str, dict[str, float]]]) -> None:
    print()
    for scenario, figures in side.items():
        key = next(k for k in ("orchestrations_per_s", "activities_per_s") if k in figures[OURS])
        target = END_TO_END_RATIO if scenario.startswith(END_TO_END) else WORKER_QUEUE_RATIO
        others = "".join(
            f"; {name} {values[key]:.1f} = {ratio(values[key], figures[ANCHOR][key]):.2f}x"
            for name, values in figures.items()
            if name not in (OURS, ANCHOR)
        )
        share = ratio(figures[OURS][key], figures[ANCHOR][key])
        print(
            f"{scenario:<52} {key} {figures[OURS][key]:8.1f} vs {figures[ANCHOR][key]:8.1f}"
            f" = {share:.2f}x {'MET' if share >= target else 'MISSED'} (>= {target}x){others}"
        )


def _every(
    rows: list[Row],
    name: str,
    value: Callable[[Row], float],
    least: float,
    show: Callable[[float], str],
) -> Target:
    """A figure every cell must hold at `least`: the worst cell's, and how many miss."""
    if not rows:
        return Target(name, None, "no such cell in this run")
    values = [(value(r), r["label"]) for r in rows]
    worst = min(values, key=lambda v: v[0])
    missing = sum(1 for v, _ in values if v < least)
    return Target(
        name,
        missing == 0,
        f"worst {show(worst[0])} ({worst[1]}); {missing} of {len(rows)} cells miss",
    )


def _none_in(grid: list[Row], flavour: str, key: str, name: str) -> Target:
    """A count that must be 0 in every cell (of its worst run): the total and where."""
    title = f"0 {name} in every cell"
    if not grid:
        return Target(title, None, "no cell in this run")
    counts = [(float(r["figures"][flavour][key]), r["label"]) for r in grid]
    worst = max(counts, key=lambda c: c[0])
    cells = sum(1 for count, _ in counts if count > 0)
    figures = f"{sum(c for c, _ in counts):.0f} in {len(grid)} cells"
    if cells:
        figures += f", in {cells} of them; most {worst[0]:.0f} ({worst[1]})"
    return Target(title, cells == 0, figures)


def _figure(flavour: str, key: str) -> Callable[[Row], float]:
    return lambda row: float(row["figures"][flavour][key])


def _times(value: float) -> str:
    return f"{value:.2f}x"


def cell_targets(grid: list[Row], flavour: str) -> list[Target]:
    light = [r for r in grid if r["cell"]["kind"] == "light"]
    hot = [r for r in grid if r["cell"]["kind"] == "hot"]
    targets = [
        _every(
            light,
            f"every light cell >= {LIGHT_RATIO}x (median of the rounds)",
            lambda r: median_ratio(r, flavour),
            LIGHT_RATIO,
            _times,
        ),
        _every(
            light,
            f"no light cell below {LIGHT_ROUND_FLOOR}x in any round",
            lambda r: least_round_ratio(r, flavour),
            LIGHT_ROUND_FLOOR,
            _times,
        ),
        _every(
            hot,
            f"every hot cell >= {HOT_RATIO}x",
            lambda r: median_ratio(r, flavour),
            HOT_RATIO,
            _times,
        ),
    ]
    targets += [_none_in(grid, flavour, key, name) for key, name in SAFETY_COUNTS.items()]
    targets.append(
        _every(
            grid,
            f"least lease left >= {MIN_LEASE_LEFT_SHARE:.0%} of the lock in every cell",
            _figure(flavour, "min_lease_left_share"),
            MIN_LEASE_LEFT_SHARE,
            lambda v: f"{v:.0%}",
        )
    )
    return targets


def end_to_end_target(side: dict[str, dict[str, dict[str, float]]], flavour: str) -> Target:
    name = f"runtime end to end >= {END_TO_END_RATIO}x"
    scenario = next((s for s in side if s.startswith(END_TO_END)), None)
    if scenario is None:
        return Target(name, None, "not run")
    ours, theirs = side[scenario][flavour], side[scenario][ANCHOR]
    share = ratio(ours["orchestrations_per_s"], theirs["orchestrations_per_s"])
    return Target(
        name,
        share >= END_TO_END_RATIO,
        f"{ours['orchestrations_per_s']:.1f} vs {theirs['orchestrations_per_s']:.1f}"
        f" orchestrations/s = {share:.2f}x",
    )


def grid_targets(document: dict[str, Any], flavour: str) -> list[Target]:
    return [
        *cell_targets(document["grid"], flavour),
        end_to_end_target(document["side_scenarios"], flavour),
        *hot_fetch_targets(document["hot_fetch_alone"], flavour),
        *light_turn_targets(document["server_us_per_call"], flavour),
    ]


def print_grid(document: dict[str, Any]) -> None:
    flavours = [name for name in document["flavours"] if name != ANCHOR]
    for flavour in flavours:
        print_cells(document["grid"], flavour)
    print_side_scenarios(document["side_scenarios"])
    rounds = f"medians of {document['plan']['repeats']} rounds, ratio to duroxide 0.2.2"
    print_ratio_table(
        f"hot fetch alone, 2,000 events of 2 KB, ms ({rounds})", document["hot_fetch_alone"]
    )
    print_ratio_table(
        f"server time per call and per light turn, us ({rounds})", document["server_us_per_call"]
    )
    light = sum(r["cell"]["kind"] == "light" for r in document["grid"])
    for flavour in flavours:
        print_targets(
            f"targets of issue 23, {flavour} against duroxide 0.2.2"
            f" ({light} light and {len(document['grid']) - light} hot cells):",
            grid_targets(document, flavour),
        )


def save_json(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2, default=str))


def _heat_row(row: Row) -> tuple[int, ...]:
    cell = row["cell"]
    if cell["kind"] == "light":
        return (cell["dispatchers"],)
    return (cell["hot_instances"], cell["history_events"])


def _heat_column(row: Row) -> int:
    cell = row["cell"]
    return int(cell["light_instances"] if cell["kind"] == "light" else cell["payload_bytes"])


def _heat_panel(axis: Any, rows: list[Row], kind: str, lock_ms: int) -> Any:
    """One panel; a load the grid does not hold is left blank (NaN)."""
    ys = sorted({_heat_row(r) for r in rows})
    xs = sorted({_heat_column(r) for r in rows})
    values = [[float("nan")] * len(xs) for _ in ys]
    for r in rows:
        values[ys.index(_heat_row(r))][xs.index(_heat_column(r))] = median_ratio(r, OURS)
    image = axis.imshow(values, cmap="RdYlGn", vmin=0.5, vmax=2.5, aspect="auto")
    for y, line in enumerate(values):
        for x, value in enumerate(line):
            if value == value:  # not NaN
                axis.text(x, y, f"{value:.2f}x", ha="center", va="center")
    y_label, x_label = (
        ("dispatchers", "light instances")
        if kind == "light"
        else ("hot instances x events", "event payload (bytes)")
    )
    axis.set_xticks(range(len(xs)), [f"{x:,}" for x in xs])
    axis.set_yticks(range(len(ys)), [" x ".join(f"{v:,}" for v in y) for y in ys])
    axis.set_xlabel(x_label)
    axis.set_ylabel(y_label)
    axis.set_title(f"{kind}, {lock_ms // 1000} s lock: taskhub-pg / duroxide 0.2.2 turns/s")
    return image


def save_heat_map(path: Path, grid: list[Row]) -> None:
    # matplotlib is optional (the `bench` extra): imported here, where it draws.
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no heat map (pip install '.[bench]')")
        return
    figure, axes = plt.subplots(2, 2, figsize=(14, 9))
    for column, lock_ms in enumerate((1_000, 5_000)):
        for row_index, kind in enumerate(("light", "hot")):
            axis = axes[row_index][column]
            rows = [
                r
                for r in grid
                if r["cell"]["kind"] == kind and r["cell"]["lock_timeout_ms"] == lock_ms
            ]
            if not rows:  # a run of some cells only (--only)
                axis.set_axis_off()
                continue
            figure.colorbar(_heat_panel(axis, rows, kind, lock_ms), ax=axis)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
