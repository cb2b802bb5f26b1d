"""The soak of issue 26 (make soak, 30 minutes of minutes) bounded to about a
minute for the suite: six "minutes" of 10 s each at 10 orchestrations a
second, the released runtime and our Python worker under the whole mix
(chains, fan-outs, timers, sub-orchestrations, events, retries, deliberate
failures), and the retention job pruning every 10 s what ended 20 s ago.

It asserts what a minute can show on a shared machine: every piece of work
ends as it should, nothing logs a problem, the retention job deletes as it
goes and the hub stays within what the window explains. The rate, latency,
size and memory trends need the real soak's half hour: their verdicts are
computed and printed here, not asserted."""

from __future__ import annotations

import re

import pytest

from drills.soak.runner import SoakResult, SoakSettings, run_soak

pytestmark = [pytest.mark.slow]

SETTINGS = SoakSettings(
    minutes=6,
    rate=10.0,
    warm_up=1,
    window=2,
    retention_s=20.0,
    prune_every_s=10.0,
    minute_s=10.0,
)


@pytest.fixture(scope="module")
def soak(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> SoakResult:
    out = tmp_path_factory.mktemp("soak")
    result = run_soak(database_url, SETTINGS, out, echo=False)
    print("\n".join(result.lines))
    return result


def test_every_minute_completes_work_and_nothing_fails_but_the_deliberate_failures(
    soak: SoakResult,
) -> None:
    assert len(soak.minutes) == SETTINGS.minutes
    assert all(minute.completions > 0 for minute in soak.minutes), soak.lines
    assert sum(minute.unexpected_failures() for minute in soak.minutes) == 0, soak.lines
    assert sum(minute.deliberate_failures() for minute in soak.minutes) > 0
    assert dict(soak.errors) == dict.fromkeys(soak.errors, 0), soak.errors


def test_the_retention_job_prunes_as_it_goes_and_the_hub_stays_within_its_window(
    soak: SoakResult,
) -> None:
    verdicts = {verdict.name: verdict for verdict in soak.verdicts}
    assert len(verdicts) == 8, soak.lines
    hub = verdicts["the hub's size is bounded by the retention window"]
    assert hub.passed, hub.line()
    (pruned,) = [line for line in soak.lines if line.startswith("retention:")]
    found = re.match(r"retention: (\d+) runs of taskhub-pg prune, (\d+) instances deleted", pruned)
    assert found and int(found[1]) >= 3 and int(found[2]) > 0, pruned
    assert pruned.endswith(" 0 failed"), pruned


def test_the_report_has_a_row_a_minute_and_a_line_a_verdict(soak: SoakResult) -> None:
    rows = [line for line in soak.lines if line[:3].strip().isdigit()]
    assert [int(row.split()[0]) for row in rows] == list(range(1, SETTINGS.minutes + 1))
    assert sum(line.startswith(("PASS", "FAIL")) for line in soak.lines) == 8
