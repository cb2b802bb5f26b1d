"""The wheel carries the migrations: from a fresh virtualenv outside the
repository, `python -m provider` upgrades a schema, prints the offline script
and reports status; `alembic` migrates from the installed package; and the
getting-started page's commands and program run as written."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from devkit.roles import LoginRole
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.paths import REPO

TYPED_SAMPLE = REPO / "tests" / "deploy" / "typed_sample"


def run(*args: str, cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@dataclass(frozen=True)
class WheelBuild:
    wheel: Path
    work: Path
    backend_output: list[str]  # what setuptools printed while building


def shared_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every test process of this session sees: under xdist, the
    session's folder above each worker's own; without it, this one's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def held(lock_file: Path) -> Iterator[None]:
    """An exclusive lock across the session's test processes (the first to
    take it builds; the others wait, then find the build done)."""
    with lock_file.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> WheelBuild:
    """The wheel, built once per session however the tests of this module are
    spread over test processes (a build takes 15-30 s, under load more)."""
    work = shared_folder(tmp_path_factory) / "taskhub-wheel"
    record = work / "backend_output.json"
    with held(shared_folder(tmp_path_factory) / "taskhub-wheel.lock"):
        if not record.exists():
            work.mkdir(exist_ok=True)
            record.write_text(json.dumps(build_wheel(work)))
    (wheel,) = work.glob("taskhub_pg-*.whl")
    return WheelBuild(wheel, work, json.loads(record.read_text()))


def build_wheel(work: Path) -> list[str]:
    """Build into `work`; what the backend printed."""
    # Built from a clean copy: no stale build/ of the working tree gets into the
    # wheel, and no build of the working tree's meets this one.
    source = work / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache", "results"
        ),
    )
    # Verbose, for the backend's output; without PYTHONDONTWRITEBYTECODE, under
    # which setuptools warns that it does not byte-compile.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-v", "-w", str(work)],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # in the order printed
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:]
    return backend_lines(done.stdout)


def backend_lines(output: str) -> list[str]:
    """The lines after pip installed the build requirements: what the build
    backend printed (pip's own lines before them are about its configuration)."""
    lines = output.splitlines()
    done = "Installing build dependencies: finished"
    starts = [n for n, line in enumerate(lines) if done in line]
    assert starts, output[-2000:]
    return lines[starts[0] + 1 :]


@pytest.fixture(scope="module")
def installed_python(
    wheel_build: WheelBuild, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """A virtualenv with the wheel and its runtime extra (and pytest, for the
    the test kit page's example) installed, made once per session; and a folder of this test
    process's own, outside the repository, to run it from."""
    venv = wheel_build.work / "venv"
    python = venv / "bin" / "python"
    with held(wheel_build.work / "venv.lock"):
        if not (venv / "installed").exists():
            run(sys.executable, "-m", "venv", str(venv), cwd=wheel_build.work)
            # The runtime extra: the getting-started page's program runs duroxide.
            run(str(python), "-m", "pip", "install", "-q", f"{wheel_build.wheel}[runtime]",
                "pytest", cwd=wheel_build.work)  # fmt: skip
            (venv / "installed").touch()
    outside = tmp_path_factory.mktemp("elsewhere")
    return python, outside


@pytest.mark.slow
def test_the_wheel_builds_without_a_warning(wheel_build: WheelBuild) -> None:
    """No "Package would be ignored" (setuptools' check of data folders that
    look like packages), nor any other warning of the build."""
    assert any("Building wheel for taskhub-pg" in line for line in wheel_build.backend_output)
    warnings = [
        line
        for line in wheel_build.backend_output
        if re.search(r"warning|would be ignored", line, re.IGNORECASE)
    ]
    assert warnings == []


@pytest.mark.slow
def test_the_wheel_holds_every_revision_and_its_sql(wheel_build: WheelBuild) -> None:
    """Every migration and every released revision's SQL file (sql/head/ is
    the development copy, which the migrations do not read)."""
    with zipfile.ZipFile(wheel_build.wheel) as wheel:
        held = set(wheel.namelist())
    migrations = REPO / "migrations"
    expected = {
        f"provider/_migrations/{path.relative_to(migrations)}"
        for pattern in ("*.py", "script.py.mako", "versions/*.py")
        for path in migrations.glob(pattern)
    }
    expected |= {
        f"provider/_sql/{path.relative_to(REPO / 'sql')}"
        for pattern in ("[0-9][0-9][0-9][0-9]_*/*.sql", "functions/*/*.sql", "functions/*/*.patch")
        for path in (REPO / "sql").glob(pattern)
    }
    assert len(expected) > 100
    assert sorted(expected - held) == []
    assert "provider/py.typed" in held
    assert "provider/dashboard/templates/overview.html" in held  # the web extra's pages
    assert "provider/dashboard/static/refresh.js" in held


@pytest.mark.slow
def test_the_wheel_holds_the_package_alone(wheel_build: WheelBuild) -> None:
    """provider/ and the wheel's own metadata: no tests, benchmarks, drills,
    devkit or scripts, and no sql/head/ (the development copy)."""
    with zipfile.ZipFile(wheel_build.wheel) as wheel:
        tops = {name.split("/", 1)[0] for name in wheel.namelist()}
        names = wheel.namelist()
    (dist_info,) = [top for top in tops if top.endswith(".dist-info")]
    assert tops == {"provider", dist_info}
    assert not [name for name in names if name.startswith("provider/_sql/head/")]
    packages = {name.rsplit("/", 1)[0] for name in names if name.endswith(".py")}
    assert not [p for p in packages if "test" in p.split("/")[-1] and p != "provider/testing"]


@pytest.mark.slow
def test_the_wheels_requirements_name_no_development_tool(wheel_build: WheelBuild) -> None:
    """What `pip show taskhub-pg` lists: the dependencies and the extras users
    ask for; the tools of development are dependency groups, not published."""
    with zipfile.ZipFile(wheel_build.wheel) as wheel:
        (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        headers = wheel.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    extras = {line.split(": ", 1)[1] for line in headers if line.startswith("Provides-Extra: ")}
    assert extras == {"binary", "metrics", "otel", "schedules", "web", "runtime"}
    required = [line.split(": ", 1)[1] for line in headers if line.startswith("Requires-Dist: ")]
    tools = ("pytest", "ruff", "mypy", "selenium", "testcontainers", "matplotlib", "httpx")
    assert [r for r in required if r.lower().startswith(tools)] == []
    assert 'duroxide==0.2.2; extra == "runtime"' in required


@pytest.mark.slow
def test_the_installed_wheel_migrates_and_reports_status(
    installed_python: tuple[Path, Path],
    database_url: str,
    sql: psycopg.Connection[object],
    runtime_login: LoginRole,
) -> None:
    python, outside = installed_python
    schema = new_schema_name("wheel")

    run(
        str(python),
        "-m",
        "provider",
        "upgrade",
        "--url",
        database_url,
        "--schema",
        schema,
        "--runtime-role",
        runtime_login.name,
        cwd=outside,
    )
    row = sql.execute(
        "SELECT to_regprocedure(%s) IS NOT NULL",
        [f'"{schema}".fetch_orchestration_item(bigint, bigint, bigint, bigint)'],
    ).fetchone()
    assert row == (True,)

    status = run(
        str(python),
        "-m",
        "provider",
        "status",
        "--url",
        database_url,
        "--schema",
        schema,
        cwd=outside,
    )
    assert f"current:  {migrate.head_revision()}" in status and "pending:  none" in status
    assert "orchestrator" in status and "dead letters 0" in status
    assert f"runtime roles: {runtime_login.name} (runtime_ddl guarded)" in status
    assert "transient failures given back: 0 in the last day, 0 in all" in status

    # The console script of the wheel: the drift check passes on what it migrated.
    gate = run(
        str(python.parent / "taskhub-pg"),
        "check",
        "--url",
        database_url,
        "--schema",
        schema,
        cwd=outside,
    )
    assert "no drift" in gate

    script = run(
        str(python),
        "-m",
        "provider",
        "sql",
        "--schema",
        "dba_hub",
        "--runtime-role",
        "hub_runtime",
        cwd=outside,
    )
    assert 'CREATE FUNCTION "dba_hub".fetch_orchestration_item' in script
    assert "pg_advisory_xact_lock" in script
    assert "taskhub_grant_runtime_role(\n        'hub_runtime', 'guarded')" in script


@pytest.mark.slow
def test_a_users_strict_mypy_passes_against_the_installed_wheel(
    installed_python: tuple[Path, Path],
) -> None:
    """The wheel ships py.typed: mypy --strict reads the provider's own types
    (without it, every name imported from provider would be an error)."""
    python, outside = installed_python
    sample = outside / "uses_the_provider.py"
    sample.write_text((TYPED_SAMPLE / "uses_the_provider.py").read_text())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--python-executable",
            str(python),
            sample.name,
        ],
        cwd=outside,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.slow
def test_the_test_kit_example_passes_in_a_users_project(
    installed_python: tuple[Path, Path], database_url: str, tmp_path: Path
) -> None:
    """The test kit page's test of a handler, with the plugin turned on as the
    page says, run by pytest in a project that installed the wheel."""
    python, _ = installed_python
    page = (REPO / "docs" / "testing-kit.md").read_text()
    example = re.search(r"<!-- test-kit-example.*?-->\n```python\n(.*?)```", page, re.S)
    assert example is not None
    project = tmp_path / "users_project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntaskhub_pg = true\n")
    (project / "test_handlers.py").write_text(example.group(1))

    def users_pytest() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "DATABASE_URL": database_url},
        )

    done = users_pytest()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout

    # Off until asked for: without the setting, the fixtures are not there.
    (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    done = users_pytest()
    assert done.returncode != 0 and "fixture 'run_activity' not found" in done.stdout


# What a project that installed the wheel adds to its own pyproject.toml for
# the alembic command line (docs/getting-started.md, "Deploy the schema").
ALEMBIC_IN_PYPROJECT = '[tool.alembic]\nscript_location = "provider:_migrations"\n'


@pytest.mark.slow
def test_alembic_runs_the_installed_migrations_from_a_users_project(
    installed_python: tuple[Path, Path], database_url: str, tmp_path: Path
) -> None:
    """`alembic upgrade head` from the installed package: two lines of the
    project's pyproject.toml name the migrations inside the wheel; the URL
    comes from DATABASE_URL (never the command line, which ps shows)."""
    python, _ = installed_python
    project = tmp_path / "deploys"
    project.mkdir()
    schema = new_schema_name("abc")

    def alembic(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python.parent / "alembic"), "-x", f"schema={schema}", *args],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "DATABASE_URL": database_url},
        )

    # Without them, alembic has nothing to go on: the error users met.
    missing = alembic("upgrade", "head")
    assert missing.returncode != 0
    assert "No 'script_location' key" in missing.stdout + missing.stderr

    (project / "pyproject.toml").write_text(ALEMBIC_IN_PYPROJECT)
    upgraded = alembic("upgrade", "head")
    assert upgraded.returncode == 0, upgraded.stdout[-2000:] + upgraded.stderr[-2000:]
    # Without alembic.ini's loggers, the run's summary is on stderr all the same.
    assert "[taskhub_pg.migrate]" in upgraded.stderr, upgraded.stderr[-2000:]
    current = alembic("current")
    assert current.returncode == 0, current.stdout[-2000:] + current.stderr[-2000:]
    assert f"{migrate.head_revision()} (head)" in current.stdout
    assert database_url not in upgraded.stdout + upgraded.stderr + current.stdout


@pytest.mark.slow
def test_the_getting_started_page_runs_from_the_installed_wheel(
    installed_python: tuple[Path, Path], database_url: str, tmp_path: Path
) -> None:
    """docs/getting-started.md, from "Deploy the schema" on: its commands with
    DATABASE_URL set, then its program, in a folder of the user's own."""
    python, _ = installed_python
    page = (REPO / "docs" / "getting-started.md").read_text()
    schema = new_schema_name("gs")
    env = {**os.environ, "DATABASE_URL": database_url, "TASKHUB_SCHEMA": schema}
    deploy = re.search(r"## Deploy the schema.*?```sh\n(.*?)```", page, re.S)
    assert deploy is not None
    commands = [line for line in deploy.group(1).splitlines() if not line.startswith("export ")]
    assert commands == [
        "taskhub-pg upgrade --schema orders",
        "taskhub-pg status --schema orders",
    ]

    def users_shell(*argv: str) -> str:
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done.stdout

    said = []
    for command in commands:
        verb, *arguments = command.replace("--schema orders", f"--schema {schema}").split()
        said.append(users_shell(str(python.parent / verb), *arguments))
    assert f"current:  {migrate.head_revision()}" in said[1]

    program = re.search(r"<!-- getting-started-program:.*?-->\n```python\n(.*?)```", page, re.S)
    assert program is not None
    (tmp_path / "first_orchestration.py").write_text(program.group(1))
    printed = users_shell(str(python), "first_orchestration.py")
    assert printed.strip().splitlines()[-1] == "Completed order 1: charged 42 EUR (attempt 1)"
