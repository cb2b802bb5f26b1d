"""A bounded failover drill (make failover-drill runs the full one, with the
lagging standby too): a primary and its streaming standby, started here,
under the released duroxide 0.2.2 runtime's load (through a proxy
repointed at promotion) and our ActivityWorker's (on a libpq multi-host
URL), through a switchover and a crash with the standby caught up.

And the drill can fail: with our worker on a single-host URL, the orders
whose activity it serves are stuck after the switchover."""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.failover import defects
from drills.failover.events import CRASH, SWITCHOVER
from drills.failover.outcome import EventOutcome
from drills.failover.report import event_lines, verdicts
from drills.failover.runner import DrillSettings, run_drill
from provider.testing.embedded_pg import EmbeddedPostgresError, find_bin_dir

pytestmark = pytest.mark.slow

# The bounded drill's tests are `timing` too: whether our worker keeps its
# leases through the switchover is a wall-clock margin (the outage against
# the lease), so they run alone. The defect run must fail anyway: it stays
# in the parallel part.
BOUNDED = DrillSettings(rate_per_s=5.0, seconds=12.0, events=(SWITCHOVER, CRASH), drain_s=90.0)


def _drill(settings: DrillSettings, log_dir: Path) -> list[EventOutcome]:
    try:
        find_bin_dir()
    except EmbeddedPostgresError as error:
        pytest.skip(f"the drill starts its own servers: {error}")
    outcomes = run_drill(settings, log_dir, print)
    for outcome in outcomes:
        print("\n".join(event_lines(outcome)))
    return outcomes


@pytest.fixture(scope="module")
def drill(tmp_path_factory: pytest.TempPathFactory) -> dict[str, EventOutcome]:
    outcomes = _drill(BOUNDED, tmp_path_factory.mktemp("failover"))
    return {outcome.event.name: outcome for outcome in outcomes}


def _unmet(outcome: EventOutcome) -> list[str]:
    return [verdict.detail for verdict in verdicts(outcome) if not verdict.passed]


@pytest.mark.timing
@pytest.mark.parametrize("event", [SWITCHOVER, CRASH])
def test_no_acknowledged_start_is_lost_and_every_order_completes(
    drill: dict[str, EventOutcome], event: str
) -> None:
    outcome = drill[event]
    assert outcome.acknowledged > 0
    assert outcome.completed == outcome.acknowledged, event_lines(outcome)
    assert _unmet(outcome) == [], event_lines(outcome)


@pytest.mark.timing
def test_our_worker_keeps_its_leases_through_the_switchover(
    drill: dict[str, EventOutcome],
) -> None:
    outcome = drill[SWITCHOVER]
    assert outcome.worker.renewals > 0, "no lease was renewed: the drill proved nothing"
    assert outcome.worker.leases_lost == 0, event_lines(outcome)


def test_the_drill_fails_a_worker_on_a_single_host_url(tmp_path: Path) -> None:
    settings = DrillSettings(
        rate_per_s=5.0,
        seconds=8.0,
        events=(SWITCHOVER,),
        drain_s=15.0,
        defect=defects.SINGLE_HOST_WORKER,
    )
    (outcome,) = _drill(settings, tmp_path)
    assert outcome.stuck, event_lines(outcome)
    assert any(text.startswith("orchestrations failed") for text in _unmet(outcome))
