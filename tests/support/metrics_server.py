"""`taskhub-pg metrics` run as a deployment runs it, for the tests of
/metrics and /healthz."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from devkit.waiting import wait_until
from provider.testing.embedded_pg import free_port


def http_base(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextmanager
def metrics_server(
    url: str,
    schema: str,
    *,
    host: str | None = "127.0.0.1",
    options: Sequence[str] = (),
    token: str | None = None,
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`taskhub-pg metrics` on a free port, as a deployment runs it (the URL
    in DATABASE_URL, where ps does not show it): its base URL and the process
    (stderr piped: what it logged). host=None: no --host (the default one);
    the base URL is then on 127.0.0.1. `token`: what the readiness probe
    sends as its bearer token (the server reads it from --token-file)."""
    port = free_port()
    where = ["--host", host] if host is not None else []
    server = subprocess.Popen(
        [sys.executable, "-m", "provider", "metrics", "--port", str(port), *where,
         "--schema", schema, *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DATABASE_URL": url},
    )  # fmt: skip
    base = http_base(host or "127.0.0.1", port)

    def up() -> bool:
        if server.poll() is not None:
            pytest.fail(f"metrics did not come up: {server.communicate()[1]!r}")
        probe = urllib.request.Request(base + "/metrics")
        if token is not None:
            probe.add_header("Authorization", f"Bearer {token}")
        try:
            urllib.request.urlopen(probe, timeout=1).read()
        except OSError:
            return False
        return True

    try:
        wait_until(up, timeout_s=20, interval_s=0.1, message=f"{base}/metrics to answer")
    except AssertionError:
        server.kill()
        pytest.fail(f"metrics did not come up: {server.communicate()[1]!r}")
    try:
        yield base, server
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(10)
