"""`taskhub-pg upgrade` through the pooled URL, as a pipeline would run it,
while the application's calls share the pool's server connections.

Through transaction pooling it must be refused in one line before any
revision ("connect directly or through session pooling"); through session
pooling, said so as the docs say (TASKHUB_POOLER=session), it must migrate
the hub to head, and `taskhub-pg check` then finds no drift. Either way,
nothing may stay behind: no advisory lock on the server, and every server
connection of the pool shows the settings a fresh session has
(devkit/pgbouncer.py visits each one)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import psycopg

from devkit.pgbouncer import PgBouncer, ServerVisit, advisory_locks, fresh_settings
from drills.pooler_drill import provider_load
from drills.pooler_drill.cli import taskhub_pg
from drills.pooler_drill.tally import Tally
from provider import TaskHub
from provider.deploy.session_pinning import DECLARATION, SESSION_POOLING

REFUSAL = "connect directly or through session pooling"
BACKGROUND_THREADS = 2


@dataclass
class MigrationReport:
    exit_code: int = 0
    output: list[str] = field(default_factory=list)  # stderr, or stdout when it worked
    check_exit_code: int | None = None  # taskhub-pg check, after a run that worked
    revision: str | None = None  # the hub's revision afterwards, read directly
    schema_exists: bool = False
    advisory_locks: list[tuple[Any, ...]] = field(default_factory=list)
    visits: list[ServerVisit] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)  # "pid N: setting = value"
    background: Tally = field(default_factory=Tally)  # the application's calls meanwhile

    @property
    def refused_in_one_line(self) -> bool:
        return self.exit_code != 0 and len(self.output) == 1 and REFUSAL in self.output[0]


def differences(visits: list[ServerVisit], fresh: dict[str, str]) -> list[str]:
    """Each setting a server connection shows that a fresh session does not."""
    return [
        f"server pid {visit.pid}: {name} = {value!r} (fresh: {fresh[name]!r})"
        for visit in visits
        for name, value in visit.settings.items()
        if value != fresh[name]
    ]


def _revision(direct_url: str, schema: str) -> tuple[bool, str | None]:
    with psycopg.connect(direct_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT count(*) FROM pg_catalog.pg_namespace WHERE nspname = %s", [schema]
        ).fetchone()
        if not exists or not exists[0]:
            return False, None
        table = conn.execute(
            "SELECT to_regclass(%s)", [f'"{schema}".taskhub_pg_alembic_version']
        ).fetchone()
        if not table or table[0] is None:
            return True, None
        row = conn.execute(
            f'SELECT version_num FROM "{schema}".taskhub_pg_alembic_version'
        ).fetchone()
        return True, None if row is None else str(row[0])


def run(
    bouncer: PgBouncer,
    url: str,
    direct_url: str,
    app_schema: str,
    new_schema: str,
    settings: dict[str, Any],
    seconds: float,
) -> MigrationReport:
    """Upgrade `new_schema` through `url` while threads call the hub in
    `app_schema` through the same pool for `seconds`."""
    report = MigrationReport()
    load = threading.Thread(target=_background, args=(url, app_schema, settings, seconds, report))
    load.start()
    # A pipeline behind session pooling says so (docs/poolers-and-failover.md).
    declared = {DECLARATION: SESSION_POOLING} if bouncer.mode == "session" else {}
    try:
        done = taskhub_pg(["upgrade", "--schema", new_schema], url, declared)
    finally:
        load.join()
    report.exit_code = done.returncode
    text = done.stdout if done.returncode == 0 else done.stderr
    report.output = [line for line in text.splitlines() if line.strip()]
    if done.returncode == 0:
        checked = taskhub_pg(["check", "--schema", new_schema], url, declared)
        report.check_exit_code = checked.returncode
    report.schema_exists, report.revision = _revision(direct_url, new_schema)
    report.advisory_locks = advisory_locks(direct_url)
    report.visits = bouncer.visit_servers(url)
    report.left_behind = differences(report.visits, fresh_settings(direct_url))
    return report


def _background(
    url: str, schema: str, settings: dict[str, Any], seconds: float, report: MigrationReport
) -> None:
    try:
        with TaskHub.connect(url, schema, pool_max_size=BACKGROUND_THREADS, **settings) as hub:
            report.background = provider_load.threads(
                hub, f"{schema}-during-migration", BACKGROUND_THREADS, seconds
            )
    except Exception as error:
        report.background.failed(error)
