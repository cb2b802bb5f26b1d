"""Where `make run` keeps its development cluster: a folder per checkout,
DEV_DIR instead when set. No database."""

from __future__ import annotations

import socket
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


def test_a_port_is_remembered_in_the_folder(tmp_path: Path) -> None:
    assert devdb.remembered_port(tmp_path) is None
    devdb.port_file(tmp_path).write_text("54321")
    assert devdb.remembered_port(tmp_path) == 54321
    assert devdb.dev_cluster(tmp_path).port == 54321


def test_a_port_someone_listens_on_is_not_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        assert not devdb.port_is_free(port)
    assert devdb.port_is_free(port)
