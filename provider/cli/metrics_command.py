"""taskhub-pg metrics: serve /metrics for a deployment with no Python app."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from provider.cli.options import PROBLEMS, USAGE, Schema, Url, console, database_url, fail

EXTRA_MISSING = "the metrics verb needs the metrics extra: pip install 'taskhub-pg[metrics]'"


def register(app: typer.Typer) -> None:
    @app.command()
    def metrics(
        port: Annotated[int, typer.Option(min=1, max=65535, help="port of /metrics")] = 9464,
        host: Annotated[str, typer.Option(help="address to listen on")] = "0.0.0.0",
        url: Url = None,
        schema: Schema = "public",
    ) -> None:
        """Serve Prometheus metrics of the hub's queues, leases and dead
        letters, read from its views at each scrape. Ctrl-C stops it (exit 0).
        Exit 2 without the metrics extra (prometheus_client), exit 1 when the
        port cannot be listened on."""
        target = database_url(url)
        try:
            from provider.metrics.collector import serve
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] != "prometheus_client":
                raise
            fail(USAGE, EXTRA_MISSING)
        try:
            server = serve(target, [schema], port=port, host=host)
        except OSError as error:  # the port taken, or a host that is not ours
            fail(PROBLEMS, f"cannot listen on {host}:{port}: {error.strerror or error}")
        console.print(f"serving http://{host}:{port}/metrics for schema {schema}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:  # the way to stop a server: not an error
            server.shutdown()
