"""taskhub-pg dashboard: the hub in a browser (the `web` extra)."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from provider.cli.hubs import require_hub
from provider.cli.options import USAGE, Schema, Url, console, database_url, fail

EXTRA_MISSING = "the dashboard verb needs the web extra: pip install 'taskhub-pg[web]'"
WEB_PACKAGES = ("starlette", "jinja2", "uvicorn")


def register(app: typer.Typer) -> None:
    @app.command()
    def dashboard(
        port: Annotated[int, typer.Option(min=1, max=65535, help="port to serve on")] = 8080,
        host: Annotated[
            str, typer.Option(help="address to listen on (this machine only, by default)")
        ] = "127.0.0.1",
        url: Url = None,
        schema: Schema = "public",
        allow_actions: Annotated[
            bool,
            typer.Option(
                help="offer requeue, release-lease, cancel, delete and prune"
                " (each asks first, and is logged)"
            ),
        ] = False,
    ) -> None:
        """Serve the hub's dashboard: overview, instances, one instance's
        history, dead letters; read-only unless --allow-actions. Ctrl-C stops
        it (exit 0). Exit 2 without the web extra, exit 3 when --schema holds
        no hub."""
        target = database_url(url)
        try:
            import uvicorn

            from provider.dashboard.app import dashboard_app
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] not in WEB_PACKAGES:
                raise
            fail(USAGE, EXTRA_MISSING)
        require_hub(target, schema)
        mode = "actions on" if allow_actions else "read-only"
        console.print(f"serving http://{host}:{port}/ for schema {schema} ({mode})")
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
        app = dashboard_app(target, schema, allow_actions=allow_actions)
        uvicorn.run(app, host=host, port=port, log_level="warning")
