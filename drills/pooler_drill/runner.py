"""The drill's modes and the parts each runs.

A mode is a pool mode (which PgBouncer) and the hub settings the provider,
the outbox's caller and the worker get. The documented modes are the
targets; the others show what the settings remove. Each part gets a fresh
hub schema of its own, made on the server directly, so no part reads
another's leftovers. In transaction mode the pool's server connections are
visited after each part: a setting one left behind is an error of that part;
then PgBouncer closes them, and the next part starts on fresh sessions.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict

from devkit.pgbouncer import PgBouncer, fresh_settings
from drills.pooler_drill import cli, latency, migration, outbox, provider_load, runtime_mix
from drills.pooler_drill import worker as worker_part
from drills.pooler_drill.tally import Tally, error_key, provider_warnings
from provider.deploy import migrate

PROVIDER, OUTBOX, WORKER, CLI, MIGRATION, RUNTIME, LATENCY = (
    "provider",
    "outbox",
    "worker",
    "CLI",
    "migration",
    "runtime",
    "latency",
)
EVERY_PART = (PROVIDER, OUTBOX, WORKER, CLI, MIGRATION, RUNTIME, LATENCY)


@dataclass(frozen=True)
class Mode:
    title: str
    pool_mode: str  # "transaction" or "session": which PgBouncer
    settings: dict[str, Any]  # TaskHub.connect's, beyond url and schema
    caller: dict[str, Any]  # the outbox caller's own psycopg connection settings
    parts: tuple[str, ...]
    documented: bool  # its results are targets; otherwise evidence


@dataclass(frozen=True)
class Sizes:
    """How much each part does (make pooler-drill's defaults; the bounded round's less)."""

    seconds: float = 6.0
    threads: int = 8
    outbox_connections: int = 4
    outbox_starts: int = 50
    slow_activities: int = 4
    quick_activities: int = 10
    orchestrations: int = 50
    settle_s: float = 90.0
    quiet_s: float = 15.0
    latency_samples: int = 30


@dataclass
class ModeReport:
    mode: Mode
    provider: tuple[Tally, Tally] | None = None  # blocking face, asyncio face
    outbox: outbox.OutboxReport | None = None
    worker: worker_part.WorkerReport | None = None
    cli: cli.CliReport | None = None
    migration: migration.MigrationReport | None = None
    runtime: runtime_mix.RuntimeReport | None = None
    latency: latency.Latency | None = None
    left_behind: dict[str, list[str]] = field(default_factory=dict)  # part -> settings
    crashed: Counter[str] = field(default_factory=Counter)  # part: error, a part that broke
    warnings: Counter[str] = field(default_factory=Counter)  # the provider's log, WARNING+


@dataclass(frozen=True)
class Bouncers:
    transaction: PgBouncer
    session: PgBouncer

    def of(self, pool_mode: str) -> PgBouncer:
        return self.transaction if pool_mode == "transaction" else self.session


def documented_modes(bouncers: Bouncers, database_url: str) -> list[Mode]:
    """The settings the docs give: transaction pooling never prepares, sets
    the statement timeout per call and listens through `listen_url` (here
    the session pooler); session pooling only drops the startup option."""
    return [
        Mode(
            "transaction pooling, documented settings",
            "transaction",
            {"pooler": "transaction", "listen_url": bouncers.session.url(database_url)},
            {"prepare_threshold": None},
            EVERY_PART[:-1],
            documented=True,
        ),
        Mode(
            "session pooling, documented settings",
            "session",
            {"pooler": "session"},
            {},
            EVERY_PART,
            documented=True,
        ),
    ]


def evidence_modes() -> list[Mode]:
    """The same workload through transaction pooling without the settings."""
    parts = (PROVIDER, OUTBOX, WORKER)
    return [
        Mode(
            "transaction pooling, defaults (no pooler setting)", "transaction", {}, {}, parts, False
        ),
        Mode(
            "transaction pooling, pooler='direct' (the provider before issue 38)",
            "transaction",
            {"pooler": "direct"},
            {},
            (PROVIDER,),
            False,
        ),
        Mode(
            "transaction pooling, statements prepared (pooler='session': psycopg's threshold of 5)",
            "transaction",
            {"pooler": "session"},
            {},
            parts,
            False,
        ),
    ]


def _schema(direct_url: str, part: str) -> str:
    schema = f"pool_{part.lower()}_{uuid.uuid4().hex[:8]}"
    migrate.upgrade(direct_url, schema)
    return schema


def run_mode(
    mode: Mode, bouncers: Bouncers, direct_url: str, sizes: Sizes, log_dir: Path
) -> ModeReport:
    report = ModeReport(mode)
    bouncer = bouncers.of(mode.pool_mode)
    url = bouncer.url(direct_url)
    fresh = fresh_settings(direct_url)
    database = str(conninfo_to_dict(direct_url)["dbname"])
    with provider_warnings() as warnings:
        for part in mode.parts:
            try:
                _run_part(part, report, bouncers, direct_url, sizes, log_dir)
            except Exception as error:  # the part broke: an error of that part
                report.crashed[f"{part}: {error_key(error)}"] += 1
            if mode.pool_mode == "transaction" and part != MIGRATION:
                left = migration.differences(bouncer.visit_servers(url), fresh)
                if left:
                    report.left_behind[part] = left
            # The next part starts on fresh server sessions: what one part
            # leaves behind is never blamed on the next.
            bouncer.reset_servers(database)
    report.warnings = warnings
    return report


def _run_part(
    part: str,
    report: ModeReport,
    bouncers: Bouncers,
    direct_url: str,
    sizes: Sizes,
    log_dir: Path,
) -> None:
    mode = report.mode
    bouncer = bouncers.of(mode.pool_mode)
    url = bouncer.url(direct_url)
    if part == PROVIDER:
        schema = _schema(direct_url, part)
        report.provider = provider_load.both_faces(
            url, schema, mode.settings, sizes.threads, sizes.seconds
        )
    elif part == OUTBOX:
        report.outbox = outbox.run(
            url,
            direct_url,
            _schema(direct_url, part),
            mode.settings,
            mode.caller,
            sizes.outbox_connections,
            sizes.outbox_starts,
        )
    elif part == WORKER:
        report.worker = worker_part.run(
            url,
            direct_url,
            _schema(direct_url, part),
            mode.settings,
            sizes.slow_activities,
            sizes.quick_activities,
        )
    elif part == CLI:
        report.cli = cli.run(url, direct_url, _schema(direct_url, part))
    elif part == MIGRATION:
        report.migration = migration.run(
            bouncer,
            url,
            direct_url,
            _schema(direct_url, "app"),
            f"pool_migrated_{uuid.uuid4().hex[:8]}",
            mode.settings,
            min(sizes.seconds, 3.0),
        )
    elif part == RUNTIME:
        report.runtime = runtime_mix.run(
            bouncer,
            direct_url,
            mode.settings,
            sizes.orchestrations,
            log_dir / f"runtime-{mode.pool_mode}",
            sizes.settle_s,
            sizes.quiet_s,
        )
    elif part == LATENCY:
        paths = {
            "direct": (direct_url, _schema(direct_url, "direct"), {}),
            mode.pool_mode: (url, _schema(direct_url, part), mode.settings),
        }
        report.latency = latency.measure(paths, sizes.latency_samples)
