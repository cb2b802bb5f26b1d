"""What tracing costs a provider call: without OpenTelemetry installed, with
the API and no SDK (the default of an application that installs the `otel`
extra and no exporter), and with an SDK recording every span.

    python -m bench.tracing_cost [--url URL] [--calls N] [--rounds R]

Each round runs each mode in a fresh process (the first mode with the
opentelemetry package made unimportable: exactly "not installed"), in an
order that alternates from round to round, on the same hub. A process times
N calls of each operation and reports microseconds per call; the table shows
the median over rounds per mode and its ratio to "not installed". Then, with
no database, the span's own Python cost per call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from bench.sides import database_url, drop_schema, fresh_schema
from bench.tracing_cost_child import MODES, OPERATIONS, install_sdk
from devkit.workloads.flavours import TASKHUB


def span_cost_us(loops: int) -> dict[str, float]:
    """A call's span alone, no database, µs per call: with the API and no SDK
    (the decision to make none), and with an SDK recording to memory."""
    from provider import tracing

    def loop(make: Callable[[str, str], tracing.CallSpan | None]) -> float:
        started = time.perf_counter()
        for _ in range(loops):
            span = make("bench", "get_queue_depths")
            if span is not None:
                with span:
                    span.saw_arguments({"p_instance_id": "x"})
                    span.returned(None)
        return (time.perf_counter() - started) / loops * 1e6

    nothing = loop(lambda schema, operation: None)
    costs = {MODES[1]: loop(tracing.call_span) - nothing}
    install_sdk()
    try:
        costs[MODES[2]] = loop(tracing.call_span) - nothing
    finally:
        tracing.set_tracer_provider(None)
    return costs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a server to use (default: DATABASE_URL, else embedded)")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    url, cluster = database_url(args.url)
    schema = fresh_schema(url, TASKHUB)
    samples: dict[str, dict[str, list[float]]] = {
        mode: {op: [] for op in OPERATIONS} for mode in MODES
    }
    try:
        for round_number in range(args.rounds):
            order = MODES if round_number % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                done = subprocess.run(
                    [
                        sys.executable,
                        *("-m", "bench.tracing_cost_child", mode, url, schema, str(args.calls)),
                    ],
                    check=False,
                    capture_output=True,
                    text=True,
                )
                if done.returncode != 0:
                    raise SystemExit(f"the {mode!r} run failed:\n{done.stderr}")
                out = done.stdout
                for operation, us in json.loads(out.splitlines()[-1]).items():
                    samples[mode][operation].append(us)
    finally:
        drop_schema(url, schema)
        if cluster is not None:
            cluster.stop()
    print(
        f"tracing cost per provider call: {args.calls} calls x {args.rounds} rounds per mode,"
        " median µs per call (ratio to not installed)"
    )
    print(f"{'operation':<34}" + "".join(f"{mode:>24}" for mode in MODES))
    for operation in OPERATIONS:
        base = statistics.median(samples[MODES[0]][operation])
        cells = []
        for mode in MODES:
            median = statistics.median(samples[mode][operation])
            cells.append(f"{median:>12.0f} ({median / base:4.2f}x)")
        print(f"{operation:<34}" + "".join(f"{cell:>24}" for cell in cells))
    for mode, cost in span_cost_us(20_000).items():
        print(f"the span alone, no database, {mode}: {cost:.2f} µs per call")


if __name__ == "__main__":
    main()
