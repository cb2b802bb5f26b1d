"""taskhub-pg metrics: serve /metrics for a deployment with no Python app."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from provider.cli.hubs import refuse_a_privileged_session
from provider.cli.options import PROBLEMS, USAGE, Schema, Url, database_url, fail, say
from provider.masking import masked, passwords_of

EXTRA_MISSING = "the metrics verb needs the metrics extra: pip install 'taskhub-pg[metrics]'"


def _address(host: str, port: int) -> str:
    """host:port as a URL writes it ([::1]:9464 for IPv6)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _token_of(path: str | None) -> str | None:
    """The bearer token in `path`, read once at start (never printed)."""
    if path is None:
        return None
    from provider.metrics.exposure import read_token

    try:
        return read_token(path)
    except (OSError, ValueError) as error:
        detail = error.strerror if isinstance(error, OSError) and error.strerror else error
        fail(USAGE, f"--token-file: {detail}")


def register(app: typer.Typer) -> None:
    @app.command()
    def metrics(
        port: Annotated[
            int,
            typer.Option(min=1, max=65535, envvar="TASKHUB_METRICS_PORT", help="port of /metrics"),
        ] = 9464,
        host: Annotated[
            str,
            typer.Option(
                envvar="TASKHUB_METRICS_HOST",
                help="address to listen on (this machine only, by default; another address"
                " needs --token-file or --insecure-no-auth)",
            ),
        ] = "127.0.0.1",
        token_file: Annotated[
            str | None,
            typer.Option(
                envvar="TASKHUB_METRICS_TOKEN_FILE",
                help="file holding a bearer token (16+ printable characters) that every"
                " request must send: Prometheus's authorization.credentials_file",
            ),
        ] = None,
        insecure_no_auth: Annotated[
            bool,
            typer.Option(help="serve a non-loopback --host to anyone, no token (logs a warning)"),
        ] = False,
        timeout: Annotated[
            float,
            typer.Option(
                min=0.1,
                max=300,
                envvar="TASKHUB_METRICS_TIMEOUT",
                help="seconds a read of the hub may take to connect, and per query",
            ),
        ] = 5.0,
        url: Url = None,
        schema: Schema = "public",
    ) -> None:
        """Serve Prometheus metrics of the hub's queues, leases and dead
        letters, read from its views at each scrape (one read at a time:
        scrapes that come meanwhile share it), and /healthz. Ctrl-C stops it
        (exit 0). Beyond loopback, every request must send the token of
        --token-file, unless --insecure-no-auth. Exit 2 without the metrics
        extra (prometheus_client), for a non-loopback --host with neither, or
        a token file that cannot be read; exit 1 when the port cannot be
        listened on."""
        target = database_url(url)
        token = _token_of(token_file)
        try:
            from provider.metrics.collector import serve
            from provider.metrics.exposure import ExposedWithoutAuthentication
        except ModuleNotFoundError as error:
            if (error.name or "").partition(".")[0] != "prometheus_client":
                raise
            fail(USAGE, EXTRA_MISSING)
        # It reads the hub's views: never as a role that can do more than its owner.
        refuse_a_privileged_session(target, schema, timeout)
        where = _address(host, port)
        try:
            server = serve(
                target, [schema], port=port, host=host, timeout_s=timeout,
                bearer_token=token, insecure_no_auth=insecure_no_auth,
            )  # fmt: skip
        except ExposedWithoutAuthentication as error:
            fail(USAGE, str(error))
        except OSError as error:  # the port taken, or a host that is not ours
            fail(PROBLEMS, f"cannot listen on {where}: {error.strerror or error}")
        say(masked(f"serving http://{where}/metrics for schema {schema}", passwords_of(target)))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:  # the way to stop a server: not an error
            server.shutdown()
