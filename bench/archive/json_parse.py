"""What reading a hot instance's history costs on each major, in its parts.

The history of bench.per_call's hot fetch (2,000 events of 2 KB), read three
ways, each query returning one number so that no printing is timed:

* the floor: the events joined as text (string_agg), as both fetches read them;
* ours: that text validated once as json (what our fetch adds to the floor);
* duroxide 0.2.2's: each event parsed into jsonb and aggregated (jsonb_agg).

The three alternate in every round; medians of the rounds, per major, each
on its own pinned binaries. This is where the hot fetch's ratio to 0.2.2
moves between majors (docs/benchmarks.md, "On every major").

    python -m bench.archive.json_parse [--majors 14,15,16,17,18] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import psycopg

from bench.per_call import HOT_ALONE
from bench.server_choice import refuse_database_url, server_version, use_bin_dir
from bench.sides import database_url, fresh_schema
from devkit import pgbinaries
from devkit.workloads.contention import hot_instance_id, seed_hot_instances
from devkit.workloads.flavours import TASKHUB

EVENTS = "FROM {q}.history AS h WHERE h.instance_id = %s AND h.execution_id = 1"
READS = {
    "string_agg floor": (
        # octet_length: length() would count the characters of 4 MB of UTF-8.
        "SELECT octet_length('[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']') "
        + EVENTS
    ),
    "as json (ours)": (
        "SELECT ('[' || string_agg(h.event_data, ',' ORDER BY h.event_id) || ']')::json IS NULL "
        + EVENTS
    ),
    "jsonb_agg (0.2.2)": (
        "SELECT jsonb_array_length(jsonb_agg(h.event_data::jsonb ORDER BY h.event_id)) " + EVENTS
    ),
}


def read_times(url: str, rounds: int) -> dict[str, float]:
    """ms per read, medians of `rounds`, the reads in the other order every other round."""
    schema = fresh_schema(url, TASKHUB)
    q = f'"{schema}"'
    samples: dict[str, list[float]] = {name: [] for name in READS}
    with psycopg.connect(url, autocommit=True) as conn:
        seed_hot_instances(conn, schema, HOT_ALONE)
        conn.execute(f"ANALYZE {q}.history")
        names = list(READS)
        for round_ in range(rounds):
            for name in names if round_ % 2 == 0 else names[::-1]:
                samples[name].append(_ms(conn, READS[name].format(q=q), hot_instance_id(0)))
    return {name: statistics.median(times) for name, times in samples.items()}


def _ms(conn: psycopg.Connection[Any], sql: str, instance: str) -> float:
    started = time.perf_counter()
    conn.execute(sql, [instance]).fetchone()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--majors", default=",".join(str(m) for m in pgbinaries.MAJORS))
    parser.add_argument("--rounds", type=int, default=21, help="rounds (medians), default 21")
    args = parser.parse_args()
    refuse_database_url("bench.archive.json_parse")
    print(f"{'PostgreSQL':<12}" + "".join(f"{name:>20}" for name in READS) + "   (ms)")
    for major in (int(m) for m in args.majors.split(",") if m.strip()):
        use_bin_dir(pgbinaries.bin_dir(major))
        url, cluster = database_url(None)
        try:
            server = server_version(url)
            times = read_times(url, args.rounds)
        finally:
            if cluster is not None:
                cluster.stop()
        print(f"{server:<12}" + "".join(f"{times[name]:>20.1f}" for name in READS), flush=True)


if __name__ == "__main__":
    main()
