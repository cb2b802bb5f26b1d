"""`make run`'s development cluster: two folders (two checkouts, or DEV_DIR)
give two clusters on two ports, and stopping one leaves the other up."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from provider.testing.embedded_pg import EmbeddedPostgresError, find_bin_dir
from tests.support.paths import REPO


def devdb(command: str, dev_dir: Path) -> str:
    """`python -m scripts.devdb COMMAND` as `make run` / `make stop` run it."""
    done = subprocess.run(
        [sys.executable, "-m", "scripts.devdb", command],
        cwd=REPO,
        env={**os.environ, "DEV_DIR": str(dev_dir)},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.strip()


def answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


@pytest.fixture
def two_dev_dirs() -> Iterator[tuple[Path, Path]]:
    """Two folders the `postgres` user can reach (pytest's tmp_path is private
    to root); each cluster is stopped and removed afterwards."""
    try:
        find_bin_dir()
    except EmbeddedPostgresError as missing:
        pytest.skip(str(missing))
    dirs = (
        Path(tempfile.mkdtemp(prefix="taskhub-dev-a-", dir="/tmp")),
        Path(tempfile.mkdtemp(prefix="taskhub-dev-b-", dir="/tmp")),
    )
    yield dirs
    for folder in dirs:
        devdb("stop", folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
def test_two_dev_dirs_give_two_clusters_and_stopping_one_leaves_the_other(
    two_dev_dirs: tuple[Path, Path],
) -> None:
    a, b = two_dev_dirs
    url_a, url_b = devdb("start", a), devdb("start", b)
    assert url_a != url_b  # two ports
    assert answers(url_a) and answers(url_b)
    assert devdb("url", a) == url_a

    assert str(a) in devdb("stop", a)
    assert not answers(url_a)
    assert answers(url_b)

    # Started again, a cluster comes back on the port it remembered ...
    assert devdb("start", a) == url_a
    devdb("stop", a)
    # ... unless something else listens there by then: it moves to a free one.
    port_a = int((a / "port").read_text())
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port_a))
        squatter.listen()
        moved = devdb("start", a)
    assert moved != url_a and answers(moved)
    assert answers(url_b)
