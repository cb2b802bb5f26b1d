"""A prototype of row-based sharding (docs/scale-out.md): one queue of
orchestration turns distributed by instance_id, measured on a Citus cluster
against the same prototype on plain PostgreSQL, in one run.

The prototype keeps what the design asks for: a primary key that contains
the instance, a lease token that names its instance (so an ack by token
alone routes to one shard), every locking or modifying statement filtered by
instance, a candidate read that locks nothing across shards, and message
order from a per-instance counter instead of a global sequence. It is not
the contract's schema: a bench of the idea, not a product.

    python -m bench.archive.citus_row_prototype --plain URL --citus COORDINATOR_URL
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from typing import Any

import psycopg

SCHEMA_SQL = """
CREATE SCHEMA {s};
CREATE TABLE {s}.turns (
    instance_id  text   NOT NULL,
    seq          bigint NOT NULL,
    payload      text   NOT NULL,
    visible_at   timestamptz NOT NULL,
    lock_token   text,
    locked_until bigint,
    PRIMARY KEY (instance_id, seq)
);
CREATE INDEX turns_visible ON {s}.turns (visible_at);
CREATE TABLE {s}.leases (
    instance_id  text   PRIMARY KEY,
    lock_token   text   NOT NULL,
    locked_until bigint NOT NULL
);
"""

DISTRIBUTE_SQL = """
SET citus.shard_count = {shards};
SELECT create_distributed_table('{s}.turns', 'instance_id');
SELECT create_distributed_table('{s}.leases', 'instance_id', colocate_with => '{s}.turns');
"""

FUNCTIONS_SQL = """
CREATE FUNCTION {s}.fetch_turn(p_lock_ms bigint)
RETURNS TABLE (out_instance_id text, out_lock_token text, out_messages integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_now_ms   bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    v_instance text;
    v_seqs     bigint[];
    v_token    text;
BEGIN
    -- Candidates: a read across shards that locks nothing.
    FOR v_instance IN
        SELECT c.instance_id
          FROM (SELECT DISTINCT t.instance_id
                  FROM {s}.turns AS t
                 WHERE t.visible_at <= clock_timestamp()
                   AND (t.lock_token IS NULL OR t.locked_until <= v_now_ms)
                 LIMIT 16) AS c
         ORDER BY random()
    LOOP
        CONTINUE WHEN NOT pg_try_advisory_xact_lock(hashtextextended(v_instance, 0));
        PERFORM 1 FROM {s}.leases AS l
         WHERE l.instance_id = v_instance AND l.locked_until > v_now_ms;
        CONTINUE WHEN FOUND;
        -- Every statement from here names the instance: one shard.
        SELECT array_agg(m.seq) INTO v_seqs
          FROM (SELECT t.seq FROM {s}.turns AS t
                 WHERE t.instance_id = v_instance
                   AND t.visible_at <= clock_timestamp()
                   AND (t.lock_token IS NULL OR t.locked_until <= v_now_ms)
                   FOR UPDATE SKIP LOCKED) AS m;
        CONTINUE WHEN v_seqs IS NULL;
        v_token := v_instance || '|' || gen_random_uuid();  -- the token names its instance
        INSERT INTO {s}.leases (instance_id, lock_token, locked_until)
        VALUES (v_instance, v_token, v_now_ms + p_lock_ms)
        ON CONFLICT (instance_id) DO UPDATE
           SET lock_token = EXCLUDED.lock_token, locked_until = EXCLUDED.locked_until;
        UPDATE {s}.turns AS t
           SET lock_token = v_token, locked_until = v_now_ms + p_lock_ms
         WHERE t.instance_id = v_instance AND t.seq = ANY (v_seqs);
        out_instance_id := v_instance;
        out_lock_token := v_token;
        out_messages := cardinality(v_seqs);
        RETURN NEXT;
        RETURN;
    END LOOP;
END;
$$;

CREATE FUNCTION {s}.ack_turn(p_lock_token text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_instance text := split_part(p_lock_token, '|', 1);
    v_now_ms   bigint := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    v_next     bigint;
BEGIN
    DELETE FROM {s}.leases AS l
     WHERE l.instance_id = v_instance AND l.lock_token = p_lock_token
       AND l.locked_until > v_now_ms;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'lease lost' USING ERRCODE = 'TH001';
    END IF;
    -- Message order per instance: a counter of the instance, not a global sequence.
    SELECT coalesce(max(t.seq), 0) + 1 INTO v_next
      FROM {s}.turns AS t WHERE t.instance_id = v_instance;
    DELETE FROM {s}.turns AS t
     WHERE t.instance_id = v_instance AND t.lock_token = p_lock_token;
    INSERT INTO {s}.turns (instance_id, seq, payload, visible_at)
    VALUES (v_instance, v_next, 'next turn', clock_timestamp());
END;
$$;
"""


def build(url: str, schema: str, distributed: bool, instances: int, shards: int = 32) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute(SCHEMA_SQL.format(s=schema))
        if distributed and shards == 0:  # the whole schema on one node, for comparison
            conn.execute(f"SELECT citus_schema_distribute('{schema}')")
        elif distributed:
            conn.execute(DISTRIBUTE_SQL.format(s=schema, shards=shards))
        conn.execute(FUNCTIONS_SQL.format(s=schema))
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {schema}.turns (instance_id, seq, payload, visible_at)"
                " VALUES (%s, 1, 'first turn', clock_timestamp())",
                [(f"inst-{n}",) for n in range(instances)],
            )


def run(url: str, schema: str, dispatchers: int, seconds: float) -> dict[str, float]:
    stop = time.monotonic() + seconds
    turns, empty, errors = [0], [0], [0]
    fetch_ms: list[float] = []
    lock = threading.Lock()

    def dispatcher() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            while time.monotonic() < stop:
                started = time.perf_counter()
                try:
                    row: Any = conn.execute(
                        f"SELECT out_lock_token FROM {schema}.fetch_turn(5000)"
                    ).fetchone()
                    took = (time.perf_counter() - started) * 1000
                    if row is None:
                        with lock:
                            empty[0] += 1
                        time.sleep(0.005)
                        continue
                    conn.execute(f"SELECT {schema}.ack_turn(%s)", [row[0]])
                except psycopg.Error:
                    with lock:
                        errors[0] += 1
                    continue
                with lock:
                    turns[0] += 1
                    fetch_ms.append(took)

    threads = [threading.Thread(target=dispatcher) for _ in range(dispatchers)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    ordered = sorted(fetch_ms) or [0.0]
    return {
        "turns_per_s": turns[0] / elapsed,
        "fetch_p50_ms": statistics.median(ordered),
        "fetch_p99_ms": ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "empty_fetches": float(empty[0]),
        "errors": float(errors[0]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plain", required=True, help="a PostgreSQL server")
    parser.add_argument("--citus", required=True, help="a Citus coordinator with workers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--dispatchers", type=int, default=8)
    parser.add_argument("--instances", type=int, default=64)
    parser.add_argument("--shards", type=int, nargs="+", default=[32, 4])
    args = parser.parse_args()
    sides = {
        "plain PostgreSQL": (args.plain, False, 0),
        "Citus, schema-based": (args.citus, True, 0),
    }
    for shards in args.shards:
        sides[f"Citus, {shards} shards"] = (args.citus, True, shards)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for round_number in range(args.rounds):
        order = list(sides) if round_number % 2 == 0 else list(sides)[::-1]
        for name in order:
            url, distributed, shards = sides[name]
            schema = f"rowproto_{uuid.uuid4().hex[:8]}"
            build(url, schema, distributed, args.instances, shards)
            try:
                runs[name].append(run(url, schema, args.dispatchers, args.seconds))
            finally:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print(
        f"row-based sharding prototype: {args.dispatchers} dispatchers, {args.instances}"
        f" instances, {args.seconds:.0f} s x {args.rounds} rounds (medians)"
    )
    metrics = list(next(iter(runs.values()))[0])
    print(f"  {'':<24}" + "".join(f"{m:>15}" for m in metrics))
    for name, values in runs.items():
        cells = [statistics.median(v[m] for v in values) for m in metrics]
        print(f"  {name:<24}" + "".join(f"{c:>15.1f}" for c in cells))


if __name__ == "__main__":
    main()
