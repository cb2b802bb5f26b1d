"""Presenting the grid: the table with each target judged, JSON, a heat map."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scripts.workloads.flavours import DUROXIDE_0_2_2, TASKHUB

OURS, THEIRS = TASKHUB.name, DUROXIDE_0_2_2.name
# The issue's targets (#10): throughput ratios, lease and error rules.
LIGHT_RATIO, HOT_RATIO, SIDE_RATIO = 1.2, 2.0, 1.1
MIN_LEASE_LEFT_SHARE = 0.5
HOT_FETCH_RATIO, HOT_FETCH_OF_FLOOR, PER_CALL_RATIO = 0.6, 1.5, 0.8


def _verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def cell_checks(row: dict[str, Any]) -> dict[str, bool]:
    ours, theirs = row["figures"][OURS], row["figures"][THEIRS]
    target = LIGHT_RATIO if row["cell"]["kind"] == "light" else HOT_RATIO
    ratio = ours["turns_per_s"] / theirs["turns_per_s"] if theirs["turns_per_s"] else float("inf")
    return {
        f"ratio >= {target}x": ratio >= target,
        "no expired lease": ours["expired_leases"] == 0,
        "no ack failure": ours["ack_failures"] == 0,
        "no error": ours["errors"] == 0,
        f"lease left >= {MIN_LEASE_LEFT_SHARE:.0%}": ours["min_lease_left_share"]
        >= MIN_LEASE_LEFT_SHARE,
    }


def _ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("inf")


def print_grid(document: dict[str, Any]) -> None:
    header = (
        f"{'cell':<62} {'ours/s':>7} {'dx/s':>7} {'ratio':>6} {'p50':>6} {'p99':>7} "
        f"{'max':>7} {'left':>5} {'dx left':>7} {'exp':>4} {'ackf':>4} {'err':>4} "
        f"{'dx err':>6}  verdict"
    )
    print()
    print(header)
    print("-" * len(header))
    for row in document["grid"]:
        ours, theirs = row["figures"][OURS], row["figures"][THEIRS]
        checks = cell_checks(row)
        missed = [name for name, ok in checks.items() if not ok]
        print(
            f"{row['label']:<62} {ours['turns_per_s']:7.0f} {theirs['turns_per_s']:7.0f} "
            f"{_ratio(ours['turns_per_s'], theirs['turns_per_s']):5.2f}x "
            f"{ours['fetch_p50_ms']:6.1f} {ours['fetch_p99_ms']:7.1f} {ours['fetch_max_ms']:7.1f} "
            f"{ours['min_lease_left_share']:5.0%} {theirs['min_lease_left_share']:7.0%} "
            f"{ours['expired_leases']:4.0f} {ours['ack_failures']:4.0f} {ours['errors']:4.0f} "
            f"{theirs['errors'] + theirs['ack_failures'] + theirs['expired_leases']:6.0f}  "
            f"{_verdict(not missed)}{' (' + ', '.join(missed) + ')' if missed else ''}"
        )
    print(
        "(latencies: ours, ms; left: least lease left at the client, share of the lock;"
        " dx err: errors + ack failures + expired leases of 0.2.2)"
    )

    print()
    for scenario, figures in document["side_scenarios"].items():
        key = next(k for k in ("orchestrations_per_s", "activities_per_s") if k in figures[OURS])
        ratio = _ratio(figures[OURS][key], figures[THEIRS][key])
        print(
            f"{scenario:<62} {key} {figures[OURS][key]:8.1f} vs {figures[THEIRS][key]:8.1f}"
            f" = {ratio:.2f}x  {_verdict(ratio >= SIDE_RATIO)} (>= {SIDE_RATIO}x)"
        )

    alone = document["hot_fetch_alone"]
    ours_ms, theirs_ms = alone[OURS]["fetch_ms"], alone[THEIRS]["fetch_ms"]
    floor_ms = alone[OURS]["string_agg_floor_ms"]
    print(
        f"\nhot fetch alone (2,000 events of 2 KB): {ours_ms:.1f} ms vs {theirs_ms:.1f} ms"
        f" = {ours_ms / theirs_ms:.2f}x {_verdict(ours_ms <= HOT_FETCH_RATIO * theirs_ms)}"
        f" (<= {HOT_FETCH_RATIO}x); string_agg floor {floor_ms:.1f} ms (0.2.2's table"
        f" {alone[THEIRS]['string_agg_floor_ms']:.1f} ms): {ours_ms / floor_ms:.2f}x"
        f" {_verdict(ours_ms <= HOT_FETCH_OF_FLOOR * floor_ms)} (<= {HOT_FETCH_OF_FLOOR}x)"
    )
    print("\nserver time per call, light instances (us, pg_stat_user_functions):")
    per_call = document["server_us_per_call"]
    for name, ours_us in per_call[OURS].items():
        theirs_us = per_call[THEIRS][name]
        ratio = _ratio(ours_us, theirs_us)
        print(
            f"  {name:<26} {ours_us:7.1f} vs {theirs_us:7.1f} = {ratio:.2f}x"
            f"  {_verdict(ratio <= PER_CALL_RATIO)} (<= {PER_CALL_RATIO}x)"
        )


def save_json(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=2, default=str))


def _heat_row(row: dict[str, Any]) -> tuple[int, ...]:
    cell = row["cell"]
    if cell["kind"] == "light":
        return (cell["dispatchers"],)
    return (cell["hot_instances"], cell["history_events"])


def _heat_column(row: dict[str, Any]) -> int:
    cell = row["cell"]
    return int(cell["light_instances"] if cell["kind"] == "light" else cell["payload_bytes"])


def save_heat_map(path: Path, grid: list[dict[str, Any]]) -> None:
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
            rows = [
                r
                for r in grid
                if r["cell"]["kind"] == kind and r["cell"]["lock_timeout_ms"] == lock_ms
            ]
            ys = sorted({_heat_row(r) for r in rows})
            xs = sorted({_heat_column(r) for r in rows})
            y_label, x_label = (
                ("dispatchers", "light instances")
                if kind == "light"
                else ("hot instances x events", "event payload (bytes)")
            )
            values = [[0.0] * len(xs) for _ in ys]
            for r in rows:
                ours = r["figures"][OURS]["turns_per_s"]
                theirs = r["figures"][THEIRS]["turns_per_s"]
                values[ys.index(_heat_row(r))][xs.index(_heat_column(r))] = _ratio(ours, theirs)
            axis = axes[row_index][column]
            image = axis.imshow(values, cmap="RdYlGn", vmin=0.5, vmax=2.5, aspect="auto")
            for y in range(len(ys)):
                for x in range(len(xs)):
                    axis.text(x, y, f"{values[y][x]:.2f}x", ha="center", va="center")
            axis.set_xticks(range(len(xs)), [f"{x:,}" for x in xs])
            axis.set_yticks(range(len(ys)), [" x ".join(f"{v:,}" for v in y) for y in ys])
            axis.set_xlabel(x_label)
            axis.set_ylabel(y_label)
            axis.set_title(f"{kind}, {lock_ms // 1000} s lock: taskhub-pg / duroxide 0.2.2 turns/s")
            figure.colorbar(image, ax=axis)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
