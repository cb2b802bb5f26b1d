"""The hot-path targets of issue 23 against duroxide 0.2.2, defined once for
`make bench-grid` and `make bench-per-call`, and how each is judged and printed."""

from __future__ import annotations

from dataclasses import dataclass

from devkit.workloads.flavours import DUROXIDE_0_2_2

ANCHOR = DUROXIDE_0_2_2.name
Metrics = dict[str, float]

LIGHT_RATIO = 1.15  # every light cell, median of the rounds
LIGHT_ROUND_FLOOR = 1.0  # no light cell below this in any single round
HOT_RATIO = 2.0
MIN_LEASE_LEFT_SHARE = 0.70  # least lease left at the client, share of the lock
END_TO_END_RATIO = 1.2
HOT_FETCH_RATIO = 0.5  # of 0.2.2's server time
HOT_FETCH_OF_FLOOR = 2.5
ORCHESTRATION_TURN_RATIO = 0.75
ACTIVITY_RATIO = 0.8
ACK_RATIO = 1.0

# Server time per light turn: which calls make a turn of each kind.
ORCHESTRATION_TURN = "orchestration turn (fetch + ack)"
ACTIVITY = "activity (fetch + ack)"
TURNS = {
    ORCHESTRATION_TURN: ("fetch_orchestration_item", "ack_orchestration_item"),
    ACTIVITY: ("fetch_work_item", "ack_worker"),
}


@dataclass(frozen=True)
class Target:
    name: str
    met: bool | None  # None: nothing measured for it in this run
    figures: str

    def line(self) -> str:
        verdict = {True: "MET", False: "MISSED", None: "NOT RUN"}[self.met]
        return f"  {verdict:<8}{self.name}: {self.figures}"


def ratio(ours: float, theirs: float) -> float:
    return ours / theirs if theirs else float("inf")


def print_targets(title: str, targets: list[Target]) -> None:
    print(f"\n{title}")
    for target in targets:
        print(target.line())


def print_ratio_table(title: str, medians: dict[str, Metrics]) -> None:
    """One row per figure, one column per flavour (in the order measured), each
    with its ratio to 0.2.2's."""
    anchor = medians[ANCHOR]
    print(f"\n{title}")
    print(f"{'':38}" + "".join(f"{name:>22}" for name in medians))
    for key in anchor:
        cells = "".join(
            f"{figures[key]:>13.1f} ({ratio(figures[key], anchor[key]):.2f}x)"
            for figures in medians.values()
        )
        print(f"{key:38}{cells}")


def with_turns(per_call: Metrics) -> Metrics:
    """Per-call figures with the server time of each kind of light turn added."""
    turns = {turn: sum(per_call[call] for call in calls) for turn, calls in TURNS.items()}
    return {**per_call, **turns}


def light_turn_targets(per_call: dict[str, Metrics], flavour: str) -> list[Target]:
    """Server time per light turn (pg_stat_user_functions) against 0.2.2."""
    ours, theirs = with_turns(per_call[flavour]), with_turns(per_call[ANCHOR])

    def against(key: str, limit: float) -> Target:
        share = ratio(ours[key], theirs[key])
        return Target(
            f"{key} <= {limit}x of 0.2.2's server time",
            share <= limit,
            f"{ours[key]:.1f} us vs {theirs[key]:.1f} us = {share:.2f}x",
        )

    return [
        against(ORCHESTRATION_TURN, ORCHESTRATION_TURN_RATIO),
        against(ACTIVITY, ACTIVITY_RATIO),
        against("ack_orchestration_item", ACK_RATIO),
        against("ack_worker", ACK_RATIO),
    ]


def hot_fetch_targets(alone: dict[str, Metrics], flavour: str) -> list[Target]:
    """One fetch of a hot instance alone: its server time against 0.2.2's, and
    its round trip against the string_agg floor's (both received whole)."""
    ours, theirs = alone[flavour], alone[ANCHOR]
    server = ratio(ours["fetch_server_ms"], theirs["fetch_server_ms"])
    round_trip = ratio(ours["fetch_ms"], theirs["fetch_ms"])
    of_floor = ratio(ours["fetch_ms"], ours["string_agg_floor_ms"])
    return [
        Target(
            f"hot fetch alone <= {HOT_FETCH_RATIO}x of 0.2.2's server time",
            server <= HOT_FETCH_RATIO,
            f"{ours['fetch_server_ms']:.1f} ms vs {theirs['fetch_server_ms']:.1f} ms"
            f" = {server:.2f}x (round trip {ours['fetch_ms']:.1f} ms vs"
            f" {theirs['fetch_ms']:.1f} ms = {round_trip:.2f}x)",
        ),
        Target(
            f"hot fetch alone <= {HOT_FETCH_OF_FLOOR}x the string_agg floor",
            of_floor <= HOT_FETCH_OF_FLOOR,
            f"round trip {ours['fetch_ms']:.1f} ms vs floor {ours['string_agg_floor_ms']:.1f} ms"
            f" = {of_floor:.2f}x (0.2.2's table: floor {theirs['string_agg_floor_ms']:.1f} ms)",
        ),
    ]
