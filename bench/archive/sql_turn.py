"""Would the light turn's fetch and ack be cheaper as SQL-language functions?

PostgreSQL 18 keeps the plans of an SQL-language function for the session;
earlier majors planned its statements again at every call, which is one
reason the hot path is PL/pgSQL (whose statements' plans were always kept).
This measures it on each major asked, against the shipped procedures:
twins of the fetch and the ack that do only what a light turn needs
(bench/archive/sql_turn_twins/, README there), created beside a fresh hub's
procedures, in three bodies:

* PL/pgSQL, step by step as the shipped procedures go;
* SQL-language, as such a body must be written (no variables);
* PL/pgSQL running that SQL body's statements verbatim: against the SQL
  one, the language is the only difference.

Each body runs light turns (bench.per_call's: fetch, ack with one event and
one message) after a warm-up, on a fresh hub each round, the bodies in the
other order every other round; server time per call from
pg_stat_user_functions, medians of the rounds; what SQL bodies would save
is taken round by round (the four bodies of a round ran back to back) and
set against the shipped light turn of that round. A version-specific body
ships only if it moves the light turn by 10 % or more.

    python -m bench.archive.sql_turn [--majors 17,18] [--rounds N] [--turns N]

Results: a table per major and bench/results/sql_turn.json.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg

from bench.function_stats import flushed_totals, function_totals, ms_per_call
from bench.per_call import LIGHT_INSTANCES, orchestration_turns, seed_light_turns
from bench.server_choice import refuse_database_url, server_version, use_bin_dir
from bench.sides import database_url, drop_schema, fresh_schema, median_metrics
from devkit import pgbinaries
from devkit.workloads.flavours import TASKHUB

# bench/results/, where every benchmark writes (.gitignore keeps it out of git).
RESULTS = Path(__file__).resolve().parents[1] / "results"
TWINS = Path(__file__).resolve().parent / "sql_turn_twins"
WARM_UP_TURNS = 20
# As the shipped fetch and ack: a twin must pay what they pay to be entered.
ATTRIBUTES = """
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
SET jit = off"""
FETCH_SIGNATURE = """(p_now_ms bigint, p_lock_timeout_ms bigint)
RETURNS TABLE (
    out_instance_id           text,
    out_orchestration_name    text,
    out_orchestration_version text,
    out_execution_id          bigint,
    out_history               json,
    out_messages              json,
    out_lock_token            text,
    out_attempt_count         integer,
    out_kv_snapshot           json
)"""
ACK_SIGNATURE = """(
    p_lock_token           text,
    p_now_ms               bigint,
    p_execution_id         bigint,
    p_history_delta        jsonb,
    p_worker_items         jsonb,
    p_orchestrator_items   jsonb,
    p_metadata             jsonb,
    p_cancelled_activities jsonb DEFAULT '[]'
)
RETURNS void"""


@dataclass(frozen=True)
class Bodies:
    label: str
    fetch: str
    ack: str


SHIPPED = Bodies("PL/pgSQL, shipped", "fetch_orchestration_item", "ack_orchestration_item")
STEPS = Bodies("PL/pgSQL, light twin", "twin_fetch_steps", "twin_ack_steps")
PL_STATEMENTS = Bodies("PL/pgSQL, SQL twin's statements", "twin_fetch_pl", "twin_ack_pl")
SQL = Bodies("SQL, light twin", "twin_fetch_sql", "twin_ack_sql")
ALL_BODIES = (SHIPPED, STEPS, PL_STATEMENTS, SQL)


def _twin(name: str, schema: str) -> str:
    return (TWINS / name).read_text().replace("__SCHEMA__", f'"{schema}"')


def statements_of(text: str) -> list[str]:
    """The statements of an SQL body, each without its final semicolon."""
    return [s.strip() for s in text.split(";\n") if s.strip()]


def as_plpgsql(statement: str) -> str:
    """A statement as a PL/pgSQL body runs it: a SELECT whose rows go nowhere
    is a PERFORM there."""
    return re.sub(r"\ASELECT\b", "PERFORM", statement)


def _create(conn: psycopg.Connection[Any], q: str, name: str, signature: str, body: str) -> None:
    language = "sql" if name.endswith("_sql") else "plpgsql"
    conn.execute(
        f"CREATE FUNCTION {q}.{name}{signature}\nLANGUAGE {language}{ATTRIBUTES}\n"
        f"AS $body$\n{body}\n$body$"
    )


def create_twins(url: str, schema: str) -> None:
    """Every twin, beside the hub's own procedures."""
    q = f'"{schema}"'
    fetch_statement = _twin("fetch_statement.sql", schema)
    ack_statements = statements_of(_twin("ack_statements.sql", schema))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_twin("lease_lost.sql", schema))
        _create(conn, q, "twin_fetch_steps", FETCH_SIGNATURE, _twin("fetch_steps.sql", schema))
        _create(conn, q, "twin_fetch_sql", FETCH_SIGNATURE, fetch_statement)
        _create(
            conn,
            q,
            "twin_fetch_pl",
            FETCH_SIGNATURE,
            f"BEGIN\nRETURN QUERY {fetch_statement};\nEND",
        )
        _create(conn, q, "twin_ack_steps", ACK_SIGNATURE, _twin("ack_steps.sql", schema))
        _create(conn, q, "twin_ack_sql", ACK_SIGNATURE, ";\n\n".join(ack_statements))
        pl_body = "".join(f"{as_plpgsql(s)};\n" for s in ack_statements)
        _create(conn, q, "twin_ack_pl", ACK_SIGNATURE, f"BEGIN\n{pl_body}END")


def _check_turns(conn: psycopg.Connection[Any], q: str, turns: int) -> None:
    """A twin that skipped work would look cheap: every turn must have left
    its event, given its message back to the queue and ended its lease."""
    row = conn.execute(
        f"SELECT (SELECT count(*) FROM {q}.history), (SELECT count(*) FROM {q}.orchestrator_queue),"
        f" (SELECT count(*) FROM {q}.instance_locks)"
    ).fetchone()
    # seed_light_turns gave each instance one event and one message.
    expected = (LIGHT_INSTANCES + turns, LIGHT_INSTANCES, 0)
    if row != expected:
        raise RuntimeError(f"history, queue and leases {row} after {turns} turns, not {expected}")


def light_turns(url: str, schema: str, bodies: Bodies, turns: int) -> dict[str, float]:
    """Server time per call (us) of the bodies' fetch and ack over `turns`
    light turns, after a warm-up (a runtime's connection lives long: what it
    plans once is not what it pays per turn)."""
    q = f'"{schema}"'
    seed_light_turns(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET track_functions = 'all'")
        orchestration_turns(conn, q, WARM_UP_TURNS, {}, bodies.fetch, bodies.ack)
        before = function_totals(conn, schema)
        orchestration_turns(conn, q, turns, {}, bodies.fetch, bodies.ack)
        expected = {bodies.fetch: turns, bodies.ack: turns}
        after = flushed_totals(url, conn, schema, before, expected)
        _check_turns(conn, q, WARM_UP_TURNS + turns)
    fetch = 1000 * ms_per_call(before, after, bodies.fetch)
    ack = 1000 * ms_per_call(before, after, bodies.ack)
    return {"fetch": fetch, "ack": ack, "turn": fetch + ack}


def measure(url: str, rounds: int, turns: int) -> dict[str, Any]:
    """Every body's medians (and runs), each round on fresh hubs, the order
    reversed every other round."""
    runs: dict[str, list[dict[str, float]]] = {b.label: [] for b in ALL_BODIES}
    for round_ in range(rounds):
        for bodies in ALL_BODIES if round_ % 2 == 0 else ALL_BODIES[::-1]:
            schema = fresh_schema(url, TASKHUB)
            try:
                create_twins(url, schema)
                runs[bodies.label].append(light_turns(url, schema, bodies, turns))
            finally:
                drop_schema(url, schema)
    return {"medians": {k: median_metrics(v) for k, v in runs.items()}, "runs": runs}


def verdict(runs: dict[str, list[dict[str, float]]]) -> dict[str, float]:
    """What SQL bodies would move the shipped light turn by, in percent
    (negative: cheaper): against the PL/pgSQL twin that does the same work
    step by step, and against the same statements in PL/pgSQL. Per round
    (its bodies ran back to back, on one state of a shared machine), then
    the median of the rounds."""

    def moved(other: Bodies) -> float:
        return statistics.median(
            100 * (sql["turn"] - theirs["turn"]) / shipped["turn"]
            for sql, theirs, shipped in zip(
                runs[SQL.label], runs[other.label], runs[SHIPPED.label], strict=True
            )
        )

    return {"sql_vs_steps_pct": moved(STEPS), "sql_vs_same_statements_pct": moved(PL_STATEMENTS)}


def print_major(server: str, result: dict[str, Any]) -> None:
    medians = result["medians"]
    shipped = medians[SHIPPED.label]["turn"]
    print(f"\nPostgreSQL {server}: server time per call, us (medians)")
    print(f"{'bodies':<34}{'fetch':>9}{'ack':>9}{'turn':>9}{'vs shipped':>12}")
    for bodies in ALL_BODIES:
        m = medians[bodies.label]
        print(
            f"{bodies.label:<34}{m['fetch']:>9.1f}{m['ack']:>9.1f}{m['turn']:>9.1f}"
            f"{m['turn'] / shipped:>11.2f}x"
        )
    v = result["verdict"]
    print(
        f"SQL bodies against PL/pgSQL doing the same, per round: {v['sql_vs_steps_pct']:+.1f} %"
        f" of the shipped light turn (step by step), {v['sql_vs_same_statements_pct']:+.1f} %"
        " (the same statements); a version-specific body needs -10 %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--majors", default="17,18", help="comma-separated, default 17,18")
    parser.add_argument("--rounds", type=int, default=9, help="rounds (medians), default 9")
    parser.add_argument("--turns", type=int, default=500, help="light turns per body and round")
    args = parser.parse_args()
    refuse_database_url("bench.archive.sql_turn")
    majors = [int(m) for m in args.majors.split(",") if m.strip()]
    unknown = sorted(set(majors) - set(pgbinaries.MAJORS))
    if unknown:
        raise SystemExit(f"no pinned binaries for {unknown}: choose from {pgbinaries.MAJORS}")
    started = time.perf_counter()
    results: dict[int, dict[str, Any]] = {}
    for major in majors:
        use_bin_dir(pgbinaries.bin_dir(major))
        url, cluster = database_url(None)
        try:
            server = server_version(url)
            result = measure(url, args.rounds, args.turns)
        finally:
            if cluster is not None:
                cluster.stop()
        result["server"] = server
        result["verdict"] = verdict(result["runs"])
        results[major] = result
        print_major(server, result)
    document = {
        "rounds": args.rounds,
        "turns": args.turns,
        "warm_up_turns": WARM_UP_TURNS,
        "bodies": [asdict(b) for b in ALL_BODIES],
        "elapsed_s": time.perf_counter() - started,
        "majors": results,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sql_turn.json").write_text(json.dumps(document, indent=2))
    print(f"\nresults in {RESULTS / 'sql_turn.json'} ({document['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
