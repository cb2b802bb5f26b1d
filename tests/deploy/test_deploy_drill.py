"""One bounded round of the deploy drill (make deploy-drill runs twenty): the
released duroxide 0.2.2 runtime keeps running while its hub is upgraded from
0005 to head, downgraded and upgraded again, and while a live duroxide 0.2.2
schema is adopted and given back."""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.deploy_drill.runner import DrillSettings, PhaseReport, run_round

# `timing` as well: the runtime's slow-statement warning (1 s), which the
# drill counts as a deploy seen, is a wall-clock margin. Beside the parallel
# part's fault runs, a wait behind a migration passed it in two fresh-clone
# runs; alone, the drill's waits stay at 0.2-0.35 s.
pytestmark = [pytest.mark.slow, pytest.mark.timing]


@pytest.fixture(scope="module")
def drill(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> list[PhaseReport]:
    settings = DrillSettings(rounds=1, rate_per_s=15.0, pause_s=0.8)
    return run_round(database_url, Path(tmp_path_factory.mktemp("drill")), settings)


def test_every_migration_run_succeeds_under_load(drill: list[PhaseReport]) -> None:
    runs = [(phase.name, m) for phase in drill for m in phase.migrations]
    assert len(runs) == 5
    assert [(name, m.label, m.detail) for name, m in runs if not m.ok] == []


def test_no_orchestration_fails_or_ends_wrong(drill: list[PhaseReport]) -> None:
    for phase in drill:
        assert phase.orchestrations > 0
        assert phase.failed_or_wrong == 0, phase.problems


def test_neither_the_runtime_nor_the_application_sees_the_deploy(
    drill: list[PhaseReport],
) -> None:
    """Before the call gate (revision 0015), a downgrade failed calls that had
    waited half-way through head's bodies (tests/deploy/test_call_gate.py)."""
    for phase in drill:
        assert phase.unfinished == 0, phase.problems
        assert sum(phase.application_errors.values()) == 0, phase.application_errors
        assert phase.runtime_log_problems == []
