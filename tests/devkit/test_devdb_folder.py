"""Where `make run` keeps its development cluster: a folder per checkout,
DEV_DIR instead when set. No database."""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit import devdb


def test_each_checkout_has_a_folder_of_its_own() -> None:
    one = devdb.default_dev_dir(Path("/work/main"))
    other = devdb.default_dev_dir(Path("/work/other"))
    assert one != other
    assert one == devdb.default_dev_dir(Path("/work/main/../main"))  # the path, resolved
    assert one.parent == Path("/tmp") and one.name.startswith("taskhub-pg-dev-")


def test_dev_dir_overrides_the_checkouts_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DEV_DIR", str(tmp_path / "dev"))
    assert devdb.dev_dir() == tmp_path / "dev"
    monkeypatch.setenv("DEV_DIR", "")  # what `make run DEV_DIR=` passes: unset
    assert devdb.dev_dir() == devdb.default_dev_dir(devdb.CHECKOUT)


def test_the_cluster_listens_on_a_socket_in_its_folder(tmp_path: Path) -> None:
    cluster = devdb.dev_cluster(tmp_path)
    assert cluster.base_dir == tmp_path and cluster.keep_data
    assert cluster.socket_path.parent == tmp_path
    assert cluster.url.endswith(f"?host={tmp_path}")  # no TCP address: the socket's folder
