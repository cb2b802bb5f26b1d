"""Would an SQL-language body make the light turn cheaper on PostgreSQL 18?

PostgreSQL 18 keeps the plans of an SQL-language function for the session,
where earlier majors planned such a function (one that is not inlined) on
every call; the hot path's helpers are PL/pgSQL partly for that reason
(sql/head/helpers/taskhub_dead_letter_cap.sql). This measures, on the server
chosen, what SQL-language twins of the PL/pgSQL helpers a light turn calls
could save: how often a light orchestration turn calls each helper
(pg_stat_user_functions), and the cost of one call of the helper and of its
twin (not inlined), each called from PL/pgSQL as the hot path calls it,
alternating, medians. The bound on the saving is the calls per turn times
the difference, set against the light turn's server time; a version-specific
body ships only if it moves the light turn by 10 % or more.

    python -m bench.archive.sql_bodies [--major N | --pg-bin DIR] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import psycopg

from bench.function_stats import calls_between, flushed_totals, function_totals
from bench.per_call import orchestration_turns, seed_light_turns
from bench.server_choice import add_server_options, server_version, use_server_options
from bench.sides import database_url, fresh_schema
from devkit.workloads.flavours import TASKHUB

TURNS = 500
TURN_FUNCTIONS = ("fetch_orchestration_item", "ack_orchestration_item")
LOOP_CALLS = 100_000
# Each PL/pgSQL helper of a light turn, with a twin in SQL that gives the
# same answer (the clock's twin leaves out its refusal of a caller clock
# far ahead, which only makes the twin cheaper: a bound). A FROM clause keeps
# each twin from being inlined, as a body with a refusal would be.
TWINS: dict[str, tuple[str, str, str]] = {
    # name: (argument type, argument in the loop, the twin's body). The
    # argument changes with the loop's i: an immutable call with a constant
    # argument would be folded into a constant once.
    "taskhub_clock_ms": (
        "bigint",
        "i::bigint",
        "SELECT greatest(s.ms, least(coalesce($1, 0), s.ms + {q}.taskhub_max_clock_skew_ms()))"
        " FROM (SELECT (extract(epoch FROM pg_catalog.clock_timestamp()) * 1000)::bigint AS ms)"
        " AS s",
    ),
    "taskhub_work_item_kind": (
        "jsonb",
        """('{"ExternalRaised": {"instance": "' || i || '", "name": "Go", "data": "{}"}}')"""
        "::jsonb",
        "SELECT CASE WHEN jsonb_typeof(i.item -> k.key) = 'object' AND i.item - k.key = '{}'"
        " THEN k.key END"
        " FROM (SELECT $1 AS item) AS i,"
        " LATERAL (SELECT split_part(substr($1::text, 3), '\"', 1) AS key) AS k"
        " WHERE jsonb_typeof(i.item) = 'object'",
    ),
}


def calls_per_turn(url: str, schema: str) -> tuple[dict[str, float], float]:
    """How often a light orchestration turn calls each helper, and the turn's
    server time (us)."""
    q = f'"{schema}"'
    seed_light_turns(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET track_functions = 'all'")
        before = function_totals(conn, schema)
        orchestration_turns(conn, q, TURNS, {})
        after = flushed_totals(url, conn, schema, before, dict.fromkeys(TURN_FUNCTIONS, TURNS))
    per_turn = {name: calls_between(before, after, name) / TURNS for name in after}
    turn_ms = sum(after[name][1] - before.get(name, (0, 0.0))[1] for name in TURN_FUNCTIONS)
    return per_turn, 1000 * turn_ms / TURNS


def _loop_seconds(conn: psycopg.Connection[Any], call: str) -> float:
    started = time.perf_counter()
    conn.execute(
        f"DO $loop$ DECLARE v text; BEGIN FOR i IN 1..{LOOP_CALLS} LOOP v := {call};"
        " END LOOP; END $loop$"
    )
    return time.perf_counter() - started


def call_costs(url: str, schema: str, rounds: int) -> dict[str, tuple[float, float]]:
    """us per call of each helper and of its twin, net of the loop's own cost."""
    q = f'"{schema}"'
    costs: dict[str, tuple[float, float]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name, (argument_type, argument, body) in TWINS.items():
            conn.execute(
                f"CREATE FUNCTION {q}.{name}_sql_twin(p {argument_type}) RETURNS"
                f" {'bigint' if argument_type == 'bigint' else 'text'} LANGUAGE sql"
                f" AS $twin$ {body.replace('{q}', q)} $twin$"
            )
            samples: dict[str, list[float]] = {"plpgsql": [], "sql": [], "loop": []}
            calls = {
                "plpgsql": f"{q}.{name}({argument})",
                "sql": f"{q}.{name}_sql_twin({argument})",
                "loop": f"({argument})::text",  # the argument alone
            }
            for round_ in range(rounds):
                order = list(calls) if round_ % 2 == 0 else list(reversed(calls))
                for kind in order:
                    samples[kind].append(_loop_seconds(conn, calls[kind]))
            loop = statistics.median(samples["loop"])

            def per_call(
                kind: str, loop: float = loop, samples: dict[str, list[float]] = samples
            ) -> float:
                return 1e6 * (statistics.median(samples[kind]) - loop) / LOOP_CALLS

            costs[name] = (per_call("plpgsql"), per_call("sql"))
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds (medians), default 5")
    add_server_options(parser)
    args = parser.parse_args()
    chosen_url = use_server_options(args)
    url, cluster = database_url(chosen_url)
    try:
        server = server_version(url)
        schema = fresh_schema(url, TASKHUB)
        per_turn, turn_us = calls_per_turn(url, schema)
        costs = call_costs(url, schema, args.rounds)
    finally:
        if cluster is not None:
            cluster.stop()
    print(f"\nPostgreSQL {server}: light turn {turn_us:.1f} us on the server")
    print(f"{'helper':<26}{'calls/turn':>11}{'plpgsql us':>12}{'sql us':>9}{'saving/turn':>13}")
    saving = 0.0
    for name, (plpgsql, sql) in costs.items():
        calls = per_turn.get(name, 0.0)
        saving += calls * (plpgsql - sql)
        print(
            f"{name:<26}{calls:>11.2f}{plpgsql:>12.2f}{sql:>9.2f}{calls * (plpgsql - sql):>13.2f}"
        )
    print(f"bound on the saving: {saving:.1f} us per light turn, {100 * saving / turn_us:.1f} %")


if __name__ == "__main__":
    main()
