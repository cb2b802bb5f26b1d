"""Chaos: the real duroxide 0.2.2 runtime, in several worker processes, runs
chained and fan-out orchestrations with sub-orchestrations and timers while
backends are terminated, the server restarts in immediate mode, workers are
SIGKILLed and lock windows make the runtime's statements time out. Every
orchestration must complete with its output, every history must be gapless
and both queues must drain.

Both flavours run in one bounded run (about a minute); `make chaos` is the
long one. On duroxide 0.2.2 a statement that fails in the middle of
`ack_orchestration_item` is followed by the runtime's ack of an
OrchestrationFailed with the same lock token, which the schema commits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.chaos.report import format_report
from drills.chaos.runner import ChaosReport, run_chaos
from drills.chaos.settings import BOUNDED
from provider.testing.embedded_pg import EmbeddedPostgres
from tests.support.flavours import DUROXIDE_0_2_2, Flavour


@pytest.fixture(scope="module")
def chaos_report(
    embedded_cluster: EmbeddedPostgres | None,
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> ChaosReport:
    """One run for both flavours: they share the restarts and the machine."""
    log_dir: Path = tmp_path_factory.mktemp("chaos")
    report = run_chaos(database_url, embedded_cluster, BOUNDED, log_dir)
    print(format_report(report))
    print(f"runtime worker logs: {log_dir}")
    return report


@pytest.mark.slow
@pytest.mark.pins_defect(
    "a statement cancelled or a backend terminated mid-ack makes the runtime ack an"
    " OrchestrationFailed with the same lock token, and the schema commits it",
    fails_on=(DUROXIDE_0_2_2.name,),
)
def test_every_orchestration_completes_under_chaos(
    flavour: Flavour, chaos_report: ChaosReport
) -> None:
    side = chaos_report.side(flavour.name)
    assert side.outcome.problems() == [], format_report(chaos_report)
    assert side.outcome.completed == side.outcome.orchestrations
