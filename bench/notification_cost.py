"""What push wakeups cost enqueue and ack, against a schema without them.

Settings, each on its own schema:

* `no listener waiting`: our schema with a worker listening but busy (the
  throughput case: under load no slot waits, so nothing is sent);
* `revision 0010`, the same with the wake check 0011 folded into the writes;
* `a listener waiting after every wakeup`: the worst case, every enqueue and
  completion notifies;
* the anchor, `without wakeups` (revision 0008 with 0010's jit = off).

Each round measures every setting, in an order that alternates, three ways:
enqueue calls/s and fetch+ack cycles/s from provider clients (what a user's
throughput sees), and the server's own time per call in a loop on the server
(no client or network time to dilute it: the strictest view). A setting's
figure is the median over rounds of its ratio to the anchor in the same
round, so a slow moment of the shared machine shifts both sides of a ratio.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import psycopg

from bench.sides import database_url
from devkit.workloads.flavours import (
    TASKHUB,
    TASKHUB_0010,
    TASKHUB_WITHOUT_WAKEUPS,
    Flavour,
)
from provider import TaskHub

TARGET = 0.03
ANCHOR = "without wakeups (anchor)"
CLIENTS = 2  # one per core of the benchmark machine
MEASURES = ("enqueue calls/s", "fetch+ack cycles/s", "server us/enqueue", "server us/fetch+ack")


def activity(n: int) -> dict[str, Any]:
    return {
        "ActivityExecute": {
            "instance": f"i-{n}",
            "execution_id": 1,
            "id": n,
            "name": "Cycle",
            "input": "null",
        }
    }


def completion_of(work_item: dict[str, Any]) -> dict[str, Any]:
    execute = dict(work_item["ActivityExecute"])
    for key in ("name", "input", "session_id", "tag"):
        execute.pop(key, None)
    return {"ActivityCompleted": {**execute, "result": "null"}}


@contextmanager
def busy_listener(url: str, schema: str) -> Iterator[None]:
    """A worker's listener, registered and not waiting: what a busy hub has."""
    with psycopg.connect(url, autocommit=True) as conn:
        for queue in ("worker", "orchestrator"):
            conn.execute(f'SELECT "{schema}".taskhub_listen(%s)', [queue])
        yield


def wait_again_after_every_wakeup(
    conn: psycopg.Connection[Any], say: psycopg.Connection[Any], waiting: str, stop: threading.Event
) -> None:
    while not stop.is_set():
        for _ in conn.notifies(timeout=0.2):
            say.execute(waiting)


@contextmanager
def listener_waiting_again(url: str, schema: str) -> Iterator[None]:
    """The worst case: a listener on each queue that waits again after every
    wakeup (a worker that runs out of work after each item)."""
    stop = threading.Event()
    threads: list[threading.Thread] = []
    with ExitStack() as stack:
        for queue in ("worker", "orchestrator"):
            conn = stack.enter_context(psycopg.connect(url, autocommit=True))
            say = stack.enter_context(psycopg.connect(url, autocommit=True))
            row = conn.execute(f'SELECT "{schema}".taskhub_listen(%s)', [queue]).fetchone()
            assert row is not None
            conn.execute(f'LISTEN "{row[0]}"')
            waiting = f'SELECT "{schema}".taskhub_set_waiting({conn.info.backend_pid}, true)'
            say.execute(waiting)
            threads.append(
                threading.Thread(
                    target=wait_again_after_every_wakeup,
                    args=(conn, say, waiting, stop),
                    daemon=True,
                )
            )
            threads[-1].start()
        try:
            yield
        finally:
            stop.set()
            for thread in threads:
                thread.join()


def in_parallel(clients: int, work: Callable[[int], None]) -> None:
    threads = [threading.Thread(target=work, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def rotated(names: list[str], n: int) -> list[str]:
    """The call order of step n: every side goes first as often as the others."""
    shift = n % len(names)
    return names[shift:] + names[:shift]


def client_rates(url: str, schemas: dict[str, str], calls: int) -> dict[str, tuple[float, float]]:
    """Per side: enqueue calls/s, then fetch+ack cycles/s draining them, from
    CLIENTS provider clients. Each client interleaves its calls over the sides
    one by one and times each call, so that whatever else the machine does
    at a moment slows every side alike; a side's rate is CLIENTS calls per its
    mean call time."""
    names = list(schemas)
    spent = {name: [0.0, 0.0] for name in names}  # enqueue s, fetch+ack s
    lock = threading.Lock()

    def client(number: int) -> None:
        hubs = {
            name: TaskHub.connect(url, schema, pool_min_size=1, pool_max_size=1)
            for name, schema in schemas.items()
        }
        mine = {name: [0.0, 0.0] for name in names}
        try:
            for n in range(calls):
                for name in rotated(names, n + number):
                    started = time.perf_counter()
                    hubs[name].enqueue_worker_work(activity(number * 1_000_000 + n))
                    mine[name][0] += time.perf_counter() - started
            for n in range(calls):
                for name in rotated(names, n + number):
                    started = time.perf_counter()
                    lease = hubs[name].fetch_work_item(30_000)
                    assert lease is not None
                    hubs[name].ack_work_item(lease.lock_token, completion_of(lease.work_item))
                    mine[name][1] += time.perf_counter() - started
        finally:
            for hub in hubs.values():
                hub.close()
        with lock:
            for name in names:
                spent[name][0] += mine[name][0]
                spent[name][1] += mine[name][1]

    in_parallel(CLIENTS, client)
    total = CLIENTS * calls
    # CLIENTS clients ran in parallel: a side's wall time is its summed time / CLIENTS.
    return {
        name: (total * CLIENTS / enqueue_s, total * CLIENTS / cycle_s)
        for name, (enqueue_s, cycle_s) in spent.items()
    }


ENQUEUE_CALL = (
    'PERFORM {q}.enqueue_worker_work(\'{{"ActivityExecute":{{"instance":"s",'
    '"execution_id":1,"id":1,"name":"Cycle","input":"null"}}}}\', 0, \'s\', 1, n);'
)
FETCH_AND_ACK_CALL = (
    "PERFORM {q}.ack_worker((SELECT out_lock_token FROM {q}.fetch_work_item(0, 30000)), 's',"
    ' \'{{"ActivityCompleted":{{"instance":"s","execution_id":1,"id":1,'
    '"result":"null"}}}}\');'
)


def server_loop(schemas: dict[str, str], call: str, calls: int) -> str:
    """A DO block that runs `call` on every side in turn, `calls` times, and
    leaves each side's microseconds per call in the temporary table spent."""
    names = list(schemas)
    indent = "\n" + " " * 16
    branches = []
    for position in range(len(names)):
        timed = []
        for name in rotated(names, position):
            side = names.index(name) + 1
            timed.append(
                "t := clock_timestamp(); "
                + call.format(q=f'"{schemas[name]}"')
                + f" spent[{side}] := spent[{side}] + extract(epoch FROM clock_timestamp() - t);"
            )
        branches.append(f"WHEN {position} THEN" + indent + indent.join(timed))
    cases = ("\n" + " " * 12).join(branches)
    return f"""
DO $$
DECLARE
    t     timestamptz;
    spent float8[] := array_fill(0::float8, ARRAY[{len(names)}]);
BEGIN
    FOR n IN 1..{calls} LOOP
        CASE n % {len(names)}
            {cases}
        END CASE;
    END LOOP;
    INSERT INTO pg_temp.spent (side, us)
    SELECT i, s * 1e6 / {calls} FROM unnest(spent) WITH ORDINALITY AS u (s, i);
END
$$"""


def server_us(url: str, schemas: dict[str, str], calls: int) -> dict[str, tuple[float, float]]:
    """Per side: the server's microseconds per enqueue, then per fetch+ack of
    what it queued, in one loop on the server that interleaves the sides."""
    names = list(schemas)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TEMPORARY TABLE spent (side integer, us float8)")
        figures: list[list[float]] = []
        for call in (ENQUEUE_CALL, FETCH_AND_ACK_CALL):
            conn.execute("TRUNCATE pg_temp.spent")
            conn.execute(server_loop(schemas, call, calls))
            rows = conn.execute("SELECT us FROM pg_temp.spent ORDER BY side").fetchall()
            figures.append([row[0] for row in rows])
    return {name: (figures[0][i], figures[1][i]) for i, name in enumerate(names)}


def empty_queues(url: str, schemas: dict[str, str]) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in schemas.values():
            conn.execute(f'TRUNCATE "{schema}".worker_queue, "{schema}".orchestrator_queue')
            conn.execute(f'VACUUM "{schema}".worker_queue, "{schema}".orchestrator_queue')


# (name, schema, who listens: nobody on the anchor, which has no wakeups)
Setting = tuple[str, Flavour, Callable[[str, str], Any] | None]
# Two phases, each against its own anchor: the worst case's listeners load the
# machine, which would slow the sides measured beside them too.
PHASES: list[list[Setting]] = [
    [
        ("no listener waiting", TASKHUB, busy_listener),
        ("no listener waiting, revision 0010", TASKHUB_0010, busy_listener),
        (ANCHOR, TASKHUB_WITHOUT_WAKEUPS, None),
    ],
    [
        ("a listener waiting after every wakeup", TASKHUB, listener_waiting_again),
        (ANCHOR, TASKHUB_WITHOUT_WAKEUPS, None),
    ],
]


def measure_phase(url: str, phase: list[Setting], rounds: int, calls: int) -> dict[str, Any]:
    schemas = {
        name: flavour.create_schema(url, f"bench_cost_{flavour.prefix}_{n}")
        for n, (name, flavour, _) in enumerate(phase)
    }
    runs: dict[str, dict[str, list[float]]] = {
        name: {measure: [] for measure in MEASURES} for name in schemas
    }
    try:
        with ExitStack() as listening:
            for name, _, listener in phase:
                if listener is not None:
                    listening.enter_context(listener(url, schemas[name]))
            for _ in range(rounds):
                rates = client_rates(url, schemas, calls)
                empty_queues(url, schemas)
                server = server_us(url, schemas, calls)
                empty_queues(url, schemas)
                for name in schemas:
                    values = (*rates[name], *server[name])
                    for measure, value in zip(MEASURES, values, strict=True):
                        runs[name][measure].append(value)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            for schema in schemas.values():
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return runs


def measure(url: str, rounds: int, calls: int) -> dict[str, dict[str, float]]:
    """Per setting and measure: the median figure, and the median ratio to
    its phase's anchor in the same round ("<measure> ratio")."""
    figures: dict[str, dict[str, float]] = {}
    for phase in PHASES:
        runs = measure_phase(url, phase, rounds, calls)
        anchor = runs[ANCHOR]
        for name, measured in runs.items():
            if name == ANCHOR and ANCHOR in figures:
                continue  # the first phase's anchor is the one shown
            figures[name] = {}
            for measure, values in measured.items():
                figures[name][measure] = statistics.median(values)
                ratios = [v / a for v, a in zip(values, anchor[measure], strict=True)]
                figures[name][f"{measure} ratio"] = statistics.median(ratios)
                figures[name][f"{measure} ratio min"] = min(ratios)
                figures[name][f"{measure} ratio max"] = max(ratios)
    anchor_row = figures.pop(ANCHOR)
    figures[ANCHOR] = anchor_row
    return figures


def cost(figures: dict[str, dict[str, float]], name: str, measure: str) -> float:
    """The setting's cost on a measure against the anchor, as a fraction:
    throughput lost for rates, time added for server microseconds."""
    ratio = figures[name][f"{measure} ratio"]
    return 1 - ratio if measure.endswith("/s") else ratio - 1


def report(figures: dict[str, dict[str, float]]) -> list[str]:
    lines = [
        f"notification cost ({CLIENTS} provider clients; server loops; "
        "median of each round's ratio to the anchor)",
        f"  {'':<38}" + "".join(f"{measure:>22}" for measure in MEASURES),
    ]
    for name in figures:
        cells = []
        for measure in MEASURES:
            value = figures[name][measure]
            shown = f"{value:.0f}" if measure.endswith("/s") else f"{value:.1f}"
            change = "" if name == ANCHOR else f" {100 * cost(figures, name, measure):+5.1f}%"
            cells.append(f"{shown + change:>22}")
        lines.append(f"  {name:<38}" + "".join(cells))
    lines.append("  (+x% = x% of the anchor's throughput lost, or x% server time added)")
    busy_row, anchor_row = figures["no listener waiting"], figures[ANCHOR]
    spread = []
    for m in MEASURES[:2]:
        least, most = 1 - busy_row[m + " ratio max"], 1 - busy_row[m + " ratio min"]
        spread.append(f"{100 * least:+.1f}..{100 * most:+.1f} %")
    lines.append(f"  busy hub, round to round: enqueue {spread[0]}, fetch+ack {spread[1]}")
    derived = []
    for rate, server in zip(MEASURES[:2], MEASURES[2:], strict=True):
        added_us = busy_row[server] - anchor_row[server]
        call_us = 1e6 * CLIENTS / anchor_row[rate]  # one client's time per call
        derived.append(
            f"{added_us:+.1f} us of a {call_us:.0f} us call ({100 * added_us / call_us:.1f} %)"
        )
    lines.append(
        f"  server time a busy hub's check adds: enqueue {derived[0]}, fetch+ack {derived[1]}"
    )
    busy = [cost(figures, "no listener waiting", measure) for measure in MEASURES[:2]]
    lines.append(
        f"  target: a busy hub (no listener waiting) loses at most {100 * TARGET:.0f} % of"
        f" enqueue and ack throughput: {100 * busy[0]:.1f} % and {100 * busy[1]:.1f} %, "
        + ("MET" if max(busy) <= TARGET else "NOT MET")
    )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=1_000)
    parser.add_argument("--url")
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    try:
        figures = measure(url, args.rounds, args.calls)
    finally:
        if cluster is not None:
            cluster.stop()
    print("\n".join(report(figures)))


if __name__ == "__main__":
    main()
