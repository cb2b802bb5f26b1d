"""What every benchmark shares: the database it runs on, a fresh schema of
each side (our schema, duroxide 0.2.2's, or another flavour), and runs that
alternate the order of the sides, with their medians. A leaf: it imports no
other benchmark module, so each of them can import it at the top."""

from __future__ import annotations

import os
import statistics
import uuid
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit, urlunsplit

import psycopg

from bench.report import Metrics
from devkit.workloads.flavours import DUROXIDE_0_2_2, TASKHUB, Flavour
from provider.testing.embedded_pg import EmbeddedPostgres

FLAVOURS = (TASKHUB, DUROXIDE_0_2_2)


def database_url(explicit: str | None) -> tuple[str, EmbeddedPostgres | None]:
    """A fresh taskhub_bench database on `explicit`, DATABASE_URL or, without
    either, an embedded cluster started here (returned, for the caller to stop)."""
    url = explicit or os.environ.get("DATABASE_URL")
    cluster = None
    if not url:
        cluster = EmbeddedPostgres.create()
        url = cluster.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS taskhub_bench WITH (FORCE)")
        conn.execute("CREATE DATABASE taskhub_bench")
    return urlunsplit(urlsplit(url)._replace(path="/taskhub_bench")), cluster


def fresh_schema(url: str, flavour: Flavour) -> str:
    return flavour.create_schema(url, f"bench_{flavour.prefix}_{uuid.uuid4().hex[:8]}")


def drop_schema(url: str, schema: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def alternating_runs(
    url: str,
    repeats: int,
    scenario: Callable[[str, str], Metrics],
    flavours: Sequence[Flavour] = FLAVOURS,
) -> dict[str, list[Metrics]]:
    """Run a scenario on a fresh schema of each flavour `repeats` times; every
    other round in the reverse order, so that neither always runs on a warm
    (or a tired) server. Every run is kept: per-round ratios need them."""
    runs: dict[str, list[Metrics]] = {flavour.name: [] for flavour in flavours}
    for repeat in range(repeats):
        order = flavours if repeat % 2 == 0 else flavours[::-1]
        for flavour in order:
            schema = fresh_schema(url, flavour)
            try:
                runs[flavour.name].append(scenario(url, schema))
            finally:
                drop_schema(url, schema)
    return runs


def compare(
    url: str,
    repeats: int,
    scenario: Callable[[str, str], Metrics],
    flavours: Sequence[Flavour] = FLAVOURS,
) -> dict[str, Metrics]:
    """Run a scenario on each schema `repeats` times, alternating the order; medians."""
    runs = alternating_runs(url, repeats, scenario, flavours)
    return {name: median_metrics(samples) for name, samples in runs.items()}


def median_metrics(samples: list[Metrics]) -> Metrics:
    return {key: statistics.median(sample[key] for sample in samples) for key in samples[0]}
