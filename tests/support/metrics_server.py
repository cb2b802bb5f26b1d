"""`taskhub-pg metrics` run as a deployment runs it, for the tests of
/metrics and /healthz."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from provider.testing.embedded_pg import free_port
from tests.support.waiting import wait_until


@contextmanager
def metrics_server(url: str, schema: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`taskhub-pg metrics` on a free port, as a deployment runs it: its base
    URL and the process (stderr piped: what it logged)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "provider", "metrics", "--port", str(port), "--host", "127.0.0.1",
         "--url", url, "--schema", schema],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if server.poll() is not None:
            pytest.fail(f"metrics did not come up: {server.communicate()[1]!r}")
        try:
            urllib.request.urlopen(base + "/metrics", timeout=1).read()
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
