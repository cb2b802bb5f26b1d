"""`make run`'s development cluster: two folders (two checkouts, or DEV_DIR)
give two clusters on two sockets, stopping one leaves the other up, and no
other local OS user can log in to either."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from provider.testing.embedded_pg import (
    SERVICE_USER,
    EmbeddedPostgres,
    EmbeddedPostgresError,
    find_bin_dir,
    free_port,
)
from tests.support.local_users import psql_as, stranger  # noqa: F401  (fixture)
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
    """Two folders the `postgres` user can be given (pytest's tmp_path is
    private to root); each cluster is stopped and removed afterwards."""
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
    assert url_a != url_b  # two sockets, each in its folder
    assert answers(url_a) and answers(url_b)
    assert devdb("url", a) == url_a

    assert str(a) in devdb("stop", a)
    assert not answers(url_a)
    assert answers(url_b)

    # Started again, a cluster comes back at the same URL.
    assert devdb("start", a) == url_a
    assert answers(url_a)


@pytest.mark.slow
def test_another_local_user_cannot_log_in_to_the_dev_cluster(
    two_dev_dirs: tuple[Path, Path],
    stranger: str,  # noqa: F811
) -> None:
    url = devdb("start", two_dev_dirs[0])
    refused = psql_as(stranger, url, "SELECT current_user")
    assert refused.returncode != 0 and refused.stdout == "", refused.stdout
    assert "Permission denied" in refused.stderr
    assert psql_as(SERVICE_USER, url, "SELECT current_user").stdout.strip() == "postgres"


@pytest.mark.slow
def test_a_dev_cluster_an_older_version_left_up_on_tcp_is_restarted_on_its_socket(
    two_dev_dirs: tuple[Path, Path],
) -> None:
    """What an older `make run` left: a server on 127.0.0.1 trusting every
    login. The next start stops it and starts it socket-only, with our rules."""
    folder = two_dev_dirs[0]
    devdb("start", folder)
    devdb("stop", folder)
    cluster = EmbeddedPostgres.create(base_dir=folder, port=free_port())  # as it picked one
    (cluster.data_dir / "pg_hba.conf").write_text("host all all 127.0.0.1/32 trust\n")
    cluster._run(
        [
            str(cluster.bin_dir / "pg_ctl"), "-D", str(cluster.data_dir),
            "-l", str(cluster.log_file), "-w",
            "-o", f"-p {cluster.port} -k {folder} -c listen_addresses=127.0.0.1",
            "start",
        ],
        "pg_ctl start as an older version did",
    )  # fmt: skip
    assert answers(f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres")

    url = devdb("start", folder)
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        assert conn.execute(
            "SELECT count(*) FROM pg_hba_file_rules WHERE auth_method = 'trust' AND type <> 'local'"
        ).fetchone() == (0,)
    assert not answers(f"postgresql://postgres@127.0.0.1:{cluster.port}/postgres")
