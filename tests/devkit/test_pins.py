"""The supply chain: dependency floors above every release with a known
advisory, and requirements/ci.txt, the hashed set `make venv` installs, in
step with pyproject.toml. No database."""

from __future__ import annotations

import copy
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from devkit import pins
from tests.support.paths import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())

# The last release of each package with a known advisory (pyproject.toml
# names them): no floor may admit it.
LAST_VULNERABLE = {
    "starlette": "1.3.0",  # CVE-2026-54282, CVE-2026-54283 (and CVE-2025-62727 before 0.49.1)
    "python-multipart": "0.0.30",  # CVE-2026-53540 (and CVE-2024-53981 before 0.0.18)
    "jinja2": "3.1.5",  # CVE-2025-27516
    "h11": "0.15.0",  # CVE-2025-43859 (uvicorn's HTTP/1.1 parser; uvicorn asks only h11>=0.8)
    "pytest": "9.0.2",  # CVE-2025-71176
    "setuptools": "82.0.1",  # CVE-2026-59890
    "wheel": "0.46.1",  # CVE-2026-24049
}


def every_requirement() -> list[Requirement]:
    project = PYPROJECT["project"]
    texts = [*project["dependencies"], *PYPROJECT["build-system"]["requires"]]
    for extra in project["optional-dependencies"].values():
        texts += extra
    for group in PYPROJECT["dependency-groups"].values():
        texts += [text for text in group if isinstance(text, str)]
    return [Requirement(text) for text in texts]


@pytest.mark.parametrize("package", LAST_VULNERABLE)
def test_no_floor_admits_a_release_with_a_known_advisory(package: str) -> None:
    naming = [r for r in every_requirement() if canonicalize_name(r.name) == package]
    assert naming, f"pyproject.toml no longer names {package}"
    for requirement in naming:
        assert not requirement.specifier.contains(LAST_VULNERABLE[package]), str(requirement)


# What the dashboard serves with: `pip install 'taskhub-pg[web]'` must get
# each floor itself, not only the development group.
WEB_SERVED_BY = ("starlette", "jinja2", "python-multipart", "h11")


@pytest.mark.parametrize("package", WEB_SERVED_BY)
def test_the_web_extra_itself_sets_each_floor_the_dashboard_needs(package: str) -> None:
    web = [Requirement(text) for text in PYPROJECT["project"]["optional-dependencies"]["web"]]
    naming = [r for r in web if canonicalize_name(r.name) == package]
    assert naming, f"the web extra sets no floor for {package}"
    assert not any(r.specifier.contains(LAST_VULNERABLE[package]) for r in naming)


@pytest.mark.parametrize("pinned_set", [pins.CI, pins.RUN], ids=["ci", "run"])
def test_the_committed_pinned_files_satisfy_pyproject(pinned_set: pins.PinnedSet) -> None:
    assert pins.problems(PYPROJECT, pinned_set.path.read_text(), pinned_set) == []


def test_the_demos_set_holds_no_development_tool() -> None:
    run = pins.pins(pins.RUN.path.read_text())
    tools = ("pytest", "ruff", "mypy", "selenium", "testcontainers", "matplotlib")
    assert [tool for tool in tools if tool in run] == []
    assert "duroxide" in run and "psycopg-binary" in run


def test_the_development_tools_are_no_published_extra() -> None:
    """Dependency groups (PEP 735): the wheel's metadata lists the extras only."""
    assert set(PYPROJECT["project"]["optional-dependencies"]) == {
        "binary",
        "metrics",
        "otel",
        "schedules",
        "web",
        "runtime",
    }
    assert {"dev", "bench"} <= set(PYPROJECT["dependency-groups"])


def test_every_pin_of_the_committed_file_has_a_hash_and_an_exact_version() -> None:
    text = pins.PINNED.read_text()
    requirement_lines = [
        line for line in text.splitlines() if line and not line.startswith((" ", "#"))
    ]
    assert requirement_lines and all("==" in line for line in requirement_lines)
    assert all(pin.hashes for pin in pins.pins(text).values())


def test_a_raised_floor_makes_the_file_stale() -> None:
    raised = copy.deepcopy(PYPROJECT)
    dev = raised["dependency-groups"]["dev"]
    dev[dev.index("starlette>=1.3.1")] = "starlette>=99"
    assert pins.problems(raised, pins.PINNED.read_text()) == [
        "starlette>=99 (the dev group) is pinned to "
        + str(pins.pins(pins.PINNED.read_text())["starlette"].version)
    ]


def test_a_new_dependency_and_a_pin_without_hashes_make_the_file_stale() -> None:
    added = copy.deepcopy(PYPROJECT)
    added["project"]["dependencies"].append("no-such-package>=1")
    stripped = "\n".join(
        line for line in pins.PINNED.read_text().splitlines() if "--hash" not in line
    )
    found = pins.problems(added, stripped)
    assert "no-such-package>=1 (dependencies) is not pinned" in found
    assert any(line.startswith("starlette==") and line.endswith("has no hash") for line in found)


def test_make_venv_refuses_a_stale_file_in_one_line_per_requirement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = pins.PINNED.read_text().splitlines()
    start = next(n for n, line in enumerate(lines) if line.startswith("starlette=="))
    end = next(n for n in range(start + 1, len(lines)) if not lines[n].startswith(" "))
    stale = tmp_path / "ci.txt"
    stale.write_text("\n".join(lines[:start] + lines[end:]))  # starlette's pin left out
    assert pins.main([str(stale)]) == 1
    said = capsys.readouterr().err.splitlines()
    assert said and all(pins.REGENERATE in line for line in said)
    assert f"{stale} is stale: starlette>=1.3.1 (the dev group) is not pinned;" in said[0]


def planned_installs(target: str, variable: str, venv: Path) -> tuple[list[str], list[str]]:
    """What `make -n target` would run with its venv at `venv`, and its pip installs."""
    planned = subprocess.run(
        ["make", "-n", target, f"{variable}={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.splitlines()
    return planned, [line for line in planned if " -m pip install" in line]


def hashed_then_editable(python: str, pinned: str) -> list[str]:
    return [
        f"{python} -m pip install --quiet --require-hashes -r {pinned}",
        f"{python} -m pip install --quiet --no-deps --no-build-isolation -e .",
    ]


def test_make_venv_installs_the_hashed_set_then_the_project_without_dependencies(
    tmp_path: Path,
) -> None:
    """What `make venv` would run in a fresh checkout (make -n: nothing runs)."""
    planned, installs = planned_installs("venv", "VENV", tmp_path / "venv")
    python = f"{tmp_path}/venv/bin/python"
    assert installs == hashed_then_editable(python, "requirements/ci.txt")
    check = f"{python} -m devkit.pins requirements/ci.txt"
    assert planned.index(check) < planned.index(installs[1])


def test_make_run_installs_the_demos_hashed_set_in_a_venv_of_its_own(tmp_path: Path) -> None:
    planned, installs = planned_installs("run", "RUN_VENV", tmp_path / "run")
    python = f"{tmp_path}/run/bin/python"
    assert installs == hashed_then_editable(python, "requirements/run.txt")
    assert f"{python} -m scripts.demo" in planned
