"""The embedded cluster (the tests', the test kit's, `make run`'s) is no
superuser login for every local OS user: it opens no TCP port and listens on
a unix socket in a folder only the server's OS user (and root) may enter."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import psycopg
import pytest

from provider.testing.embedded_pg import SERVICE_USER, EmbeddedPostgres, EmbeddedPostgresError
from tests.support.local_users import psql, psql_as, run_as, stranger  # noqa: F401  (fixture)

WHO = "SELECT current_user || ' superuser=' || rolsuper FROM pg_roles WHERE rolname = current_user"


@pytest.fixture
def cluster(embedded_cluster: EmbeddedPostgres | None) -> EmbeddedPostgres:
    if embedded_cluster is None:
        pytest.skip("the server is not ours (DATABASE_URL or testcontainers)")
    return embedded_cluster


def test_another_local_user_cannot_log_in_to_the_cluster(
    cluster: EmbeddedPostgres,
    stranger: str,  # noqa: F811
) -> None:
    assert run_as(stranger, [psql(), "--version"]).returncode == 0  # psql runs for them
    refused = psql_as(stranger, cluster.url, WHO)
    assert refused.returncode != 0 and refused.stdout == "", refused.stdout
    assert "Permission denied" in refused.stderr
    # The same command as the server's user works: the URL is not what failed.
    allowed = psql_as(SERVICE_USER, cluster.url, WHO)
    assert allowed.stdout.strip() == "postgres superuser=true", allowed.stderr


def test_the_cluster_opens_no_tcp_port_and_trusts_no_tcp_login(cluster: EmbeddedPostgres) -> None:
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        host_rules = conn.execute(
            "SELECT type, auth_method FROM pg_hba_file_rules"
            " WHERE type LIKE 'host%' AND auth_method <> 'reject'"
        ).fetchall()
    assert host_rules == []


def test_the_socket_folder_is_the_server_users_alone(cluster: EmbeddedPostgres) -> None:
    folder = cluster.socket_path.parent
    assert cluster.socket_path.is_socket()
    assert folder.stat().st_mode & 0o777 == 0o700
    if os.geteuid() == 0:
        assert folder.stat().st_uid == pwd.getpwnam(SERVICE_USER).pw_uid
    assert f"host={folder}" in cluster.url


def test_a_socket_path_too_long_is_refused_in_one_line_before_anything_is_made(
    tmp_path: Path,
) -> None:
    folder = tmp_path / ("x" * 120)
    cluster = EmbeddedPostgres(base_dir=folder, port=5432, bin_dir=Path("/nonexistent"))
    with pytest.raises(EmbeddedPostgresError) as refused:
        cluster.start()
    assert "longer than 107 bytes" in str(refused.value) and "\n" not in str(refused.value)
    assert not folder.exists()
