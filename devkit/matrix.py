"""The compatibility tier on every supported PostgreSQL major: `make test-matrix`.

`make test` runs the whole suite on the machine's PostgreSQL. This runs the
part of it that a server's version can change, once per major, each on a
throwaway cluster of that major's own binaries (devkit/pgbinaries.py: pinned,
checked by digest, cached outside the repository; or `PG_BIN_<major>` when a
user has their own), and prints one summary: per major, the tests passed, and
the released runtime's scenario groups on each duroxide release (0.2.2 in the
suite's own virtualenv, 0.2.1 in one of its own: devkit/released_runtimes.py).

    python -m devkit.matrix                 # 14 15 16 17 18
    python -m devkit.matrix 14 17           # some of them
    MATRIX_WORKERS=2 python -m devkit.matrix

Exit status 0 only when every major passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from devkit.pgbinaries import MAJORS, BinariesError, bin_dir

CHECKOUT = Path(__file__).resolve().parent.parent

# What a server's version can change: the schema's deployment and its way
# back, adoption of duroxide 0.2.2's schema, the contract and validation
# suite, the bad-input catalogue, the hot path's SQL, the released runtime's
# scenarios (0.2.2 and 0.2.1), roles and privileges, flow control in the
# worker fetch, and the drift check.
TIER = (
    "tests/deploy/test_migrations.py",
    "tests/deploy/test_head_schema.py",
    "tests/deploy/test_adoption.py",
    "tests/deploy/test_live_signatures.py",
    "tests/deploy/test_drift_check.py",
    "tests/runtime/test_check_names_runtimes.py",
    "tests/deploy/test_least_privilege.py",
    "tests/deploy/test_managed_admin.py",
    "tests/deploy/test_superuser_steps.py",
    "tests/deploy/test_schema_templates.py",
    "tests/validation",
    "tests/sql/test_bad_input.py",
    "tests/sql/test_json_depth.py",
    "tests/sql/test_hot_path_writes.py",
    "tests/sql/test_orchestration_fetch.py",
    "tests/sql/test_worker_fetch.py",
    "tests/sql/test_flow_control.py",
    "tests/sql/test_fixed_defects.py",
    "tests/sql/test_operations.py",
    "tests/runtime/test_duroxide_runtime.py",
    "tests/runtime/test_released_runtimes.py",
    "tests/runtime/test_deep_rows.py",
    "tests/ops/test_operator_role.py",
)
# The released runtime's scenarios: one test function per scenario group,
# run in each way the runtime may log in, on the suite's own release.
SCENARIOS = "tests/runtime/test_duroxide_runtime.py"
SUITES_RELEASE = "0.2.2"
# Another release's groups run in one test per login; each such test names
# its release and each group's outcome in its properties
# (tests/runtime/test_released_runtimes.py), which junit's xunit1 form writes.
RELEASE_PROPERTY = "duroxide"
GROUP_PROPERTY = "scenario group "
# The timing tests assert wall-clock margins: `make test` runs them alone.
SELECTION = "not timing"


@dataclass
class MajorResult:
    major: int
    server: str = ""
    outcomes: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    # Per duroxide release, each group: passed in every way it ran.
    scenario_groups: dict[str, dict[str, bool]] = field(default_factory=dict)
    seconds: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not self.failed and self.outcomes["passed"] > 0

    def line(self) -> str:
        if self.error:
            return f"PostgreSQL {self.major:<3} ERROR  {self.error}"
        skipped = self.outcomes["skipped"]
        return (
            f"PostgreSQL {self.server:<7} {'ok    ' if self.ok else 'FAILED'}"
            f" {self.outcomes['passed']:>4} passed, {len(self.failed)} failed,"
            f" {skipped} skipped, {self.outcomes['xfailed']} xfailed;"
            f" runtime scenario groups {self.groups_line()};"
            f" {self.seconds / 60:.1f} min"
        )

    def groups_line(self) -> str:
        """`0.2.2 15/15, 0.2.1 15/15`: the newest release first."""
        releases = sorted(self.scenario_groups, key=_release_key, reverse=True)
        counts = []
        for release in releases:
            groups = self.scenario_groups[release]
            counts.append(f"{release} {sum(groups.values())}/{len(groups)}")
        return ", ".join(counts) or "none ran"


def binaries_of(major: int) -> Path:
    if own := os.environ.get(f"PG_BIN_{major}"):
        return Path(own)
    return bin_dir(major)


def server_version(binaries: Path) -> str:
    shown = subprocess.run(
        [str(binaries / "postgres"), "--version"], capture_output=True, text=True, check=True
    )
    return shown.stdout.split()[-1]


def run_major(major: int, workers: int) -> MajorResult:
    result = MajorResult(major)
    try:
        binaries = binaries_of(major)
        result.server = server_version(binaries)
    except (BinariesError, OSError, subprocess.CalledProcessError) as exc:
        result.error = str(exc)
        return result
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PG_BIN")}
    env["PG_BIN"] = str(binaries)
    with tempfile.TemporaryDirectory(prefix="taskhub-matrix-") as scratch:
        report = Path(scratch) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            *TIER,
            "-m",
            SELECTION,
            "-n",
            str(workers),
            "--dist",
            "worksteal",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--junitxml={report}",
            # A test case's properties (the other releases' groups) are
            # written in this form only.
            "-o",
            "junit_family=xunit1",
        ]
        print(f"== PostgreSQL {result.server} ({binaries})", flush=True)
        started = time.monotonic()
        subprocess.run(command, cwd=CHECKOUT, env=env)
        result.seconds = time.monotonic() - started
        if not report.exists():
            result.error = "pytest wrote no report"
            return result
        read_report(report, result)
    return result


def read_report(report: Path, result: MajorResult) -> None:
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = outcome_of(case)
        result.outcomes[outcome] += 1
        name = f"{case.get('classname')}::{case.get('name')}"
        if outcome == "failed":
            result.failed.append(name)
        module = (case.get("classname") or "").replace(".", "/") + ".py"
        if module == SCENARIOS:
            group = (case.get("name") or "").split("[")[0]
            _count_group(result, SUITES_RELEASE, group, outcome == "passed")
        properties = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        if release := properties.get(RELEASE_PROPERTY):
            for name, value in properties.items():
                if name.startswith(GROUP_PROPERTY):
                    group = name.removeprefix(GROUP_PROPERTY)
                    _count_group(result, release, group, value == "passed")


def _count_group(result: MajorResult, release: str, group: str, passed: bool) -> None:
    groups = result.scenario_groups.setdefault(release, {})
    groups[group] = groups.get(group, True) and passed


def _release_key(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split(".") if part.isdigit())


def outcome_of(case: ET.Element) -> str:
    if case.find("failure") is not None or case.find("error") is not None:
        return "failed"
    skipped = case.find("skipped")
    if skipped is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def main(argv: list[str]) -> int:
    majors = tuple(int(a) for a in argv) or MAJORS
    workers = int(os.environ.get("MATRIX_WORKERS", "3"))
    results = [run_major(major, workers) for major in majors]
    print("\nmake test-matrix: the compatibility tier per PostgreSQL major")
    for result in results:
        print(result.line())
        for name in result.failed:
            print(f"    failed: {name}")
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
