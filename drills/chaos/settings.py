"""How big and how violent a chaos run is."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

Interval = tuple[float, float]  # seconds between two faults: drawn uniformly in [low, high]


@dataclass(frozen=True)
class ChaosSettings:
    orchestrations: int = 1_000  # per side, all started before the faults begin
    fault_seconds: float = 240.0  # faults stop earlier once every orchestration has ended
    drain_seconds: float = 120.0  # after the faults: the most the runtime gets to finish
    # Nothing changed for this long (longer than a lock timeout, so a killed
    # worker's leases have come back): whatever is unfinished stays so.
    quiet_seconds: float = 12.0
    workers_per_side: int = 3
    seed: int = 11
    # Runtime statements are cancelled after this; the lock windows last a
    # little longer, so an ack that starts in a window times out and the
    # runtime's follow-up ack of the failure commits right after the window.
    statement_timeout_ms: int = 200
    lock_overrun_ms: int = 80
    lock_every_s: Interval = (0.15, 0.5)
    terminate_every_s: Interval = (0.1, 0.3)
    kill_every_s: Interval = (2.0, 5.0)
    restart_every_s: Interval = (8.0, 14.0)

    @property
    def lock_window_s(self) -> float:
        return (self.statement_timeout_ms + self.lock_overrun_ms) / 1000


# The run inside `make test`: about a minute for both sides together.
BOUNDED = ChaosSettings(orchestrations=120, fault_seconds=32.0, drain_seconds=30.0)


def from_environment(base: ChaosSettings = ChaosSettings()) -> ChaosSettings:
    """`base` with CHAOS_ORCHESTRATIONS, CHAOS_SECONDS, CHAOS_WORKERS and CHAOS_SEED applied."""
    env = os.environ.get
    return replace(
        base,
        orchestrations=int(env("CHAOS_ORCHESTRATIONS", base.orchestrations)),
        fault_seconds=float(env("CHAOS_SECONDS", base.fault_seconds)),
        workers_per_side=int(env("CHAOS_WORKERS", base.workers_per_side)),
        seed=int(env("CHAOS_SEED", base.seed)),
    )
