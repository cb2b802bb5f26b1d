"""taskhub-pg metrics: serve /metrics for a deployment with no Python app."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from provider.cli.options import Schema, Url, console, database_url


def register(app: typer.Typer) -> None:
    @app.command()
    def metrics(
        port: Annotated[int, typer.Option(min=1, max=65535, help="port of /metrics")] = 9464,
        host: Annotated[str, typer.Option(help="address to listen on")] = "0.0.0.0",
        url: Url = None,
        schema: Schema = "public",
    ) -> None:
        """Serve Prometheus metrics of the hub's queues, leases and dead
        letters, read from its views at each scrape."""
        from provider.metrics.collector import serve

        server = serve(database_url(url), [schema], port=port, host=host)
        console.print(f"serving http://{host}:{port}/metrics for schema {schema}")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            server.shutdown()
