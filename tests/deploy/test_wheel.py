"""The wheel carries the migrations: from a fresh virtualenv outside the
repository, `python -m provider` upgrades a schema, prints the offline script
and reports status; `alembic` migrates from the installed package; and the
getting-started page's commands and program run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import psycopg
import pytest

from devkit.roles import LoginRole
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.paths import REPO
from tests.support.wheel import WheelBuild, built_wheel, run, wheel_venv

TYPED_SAMPLE = REPO / "tests" / "deploy" / "typed_sample"


@pytest.fixture(scope="module")
def wheel_build(tmp_path_factory: pytest.TempPathFactory) -> WheelBuild:
    return built_wheel(tmp_path_factory)


@pytest.fixture(scope="module")
def installed_python(
    wheel_build: WheelBuild, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    return wheel_venv(wheel_build, tmp_path_factory)


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
    """Every migration, every released revision's SQL file, and sql/head/,
    whose DDL guard body the role verbs install (without it, `python -m
    provider upgrade --runtime-role` on an existing hub failed from the wheel)."""
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
        for pattern in (
            "[0-9][0-9][0-9][0-9]_*/*.sql",
            "head/*/*.sql",
            "functions/*/*.sql",
            "functions/*/*.patch",
        )
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
    devkit or scripts."""
    with zipfile.ZipFile(wheel_build.wheel) as wheel:
        tops = {name.split("/", 1)[0] for name in wheel.namelist()}
        names = wheel.namelist()
    (dist_info,) = [top for top in tops if top.endswith(".dist-info")]
    assert tops == {"provider", dist_info}
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


def fresh_venv_with(requirement: str, work: Path) -> Path:
    """A new virtualenv in `work` with `requirement` installed by pip; its bin folder."""
    venv = work / "venv"
    python = str(venv / "bin" / "python")
    run(sys.executable, "-m", "venv", str(venv), cwd=work)
    # As the page says: Python 3.11's own pip (23.2) refuses `name[extra] @ git+file:...`.
    run(python, "-m", "pip", "install", "-q", "--upgrade", "pip", cwd=work)
    run(python, "-m", "pip", "install", "-q", requirement, cwd=work)
    return venv / "bin"


def assert_installed_with_migrations(bin_folder: Path, cwd: Path) -> None:
    said = run(str(bin_folder / "taskhub-pg"), "--version", cwd=cwd)
    assert said.strip().endswith(version("taskhub-pg"))
    sql = run(str(bin_folder / "taskhub-pg"), "sql", "--schema", "orders", cwd=cwd)
    assert f"'{migrate.head_revision()}'" in sql  # the offline script, from the installed SQL


@pytest.mark.slow
def test_pip_installs_from_a_checkout(wheel_build: WheelBuild, tmp_path: Path) -> None:
    """docs/getting-started.md: `pip install '.[binary]'` in a checkout (the
    clean copy the wheel was built from)."""
    source = wheel_build.work / "source"
    bin_folder = fresh_venv_with(f"{source}[binary]", tmp_path)
    assert_installed_with_migrations(bin_folder, tmp_path)


@pytest.mark.slow
def test_pip_installs_from_the_repository_url(tmp_path: Path) -> None:
    """docs/getting-started.md: `pip install 'taskhub-pg[binary] @ git+URL'`,
    with the URL of a clone of this repository (its committed tree)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "taskhub-pg.git"
    run("git", "clone", "--quiet", "--bare", str(REPO), str(clone), cwd=tmp_path)
    bin_folder = fresh_venv_with(f"taskhub-pg[binary] @ git+file://{clone}", tmp_path)
    assert_installed_with_migrations(bin_folder, tmp_path)
