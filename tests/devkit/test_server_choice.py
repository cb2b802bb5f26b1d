"""bench/server_choice.py: --url, --pg-bin and --major name the server a
benchmark runs on; no database."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from bench import server_choice
from devkit import pgbinaries


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    server_choice.add_server_options(parser)
    return parser.parse_args(list(argv))


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """devkit.pgbinaries.bin_dir without a download: the majors asked for."""
    asked: list[int] = []

    def bin_dir(major: int) -> Path:
        asked.append(major)
        return Path(f"/cache/postgresql-{major}/bin")

    monkeypatch.setattr(pgbinaries, "bin_dir", bin_dir)
    # Set through monkeypatch before they are removed, so that whatever the
    # code under test writes there is undone after the test (delenv of an
    # unset variable records nothing; the other tests of this process start
    # their servers from PG_BIN).
    for name in ("PG_BIN", "DATABASE_URL"):
        monkeypatch.setenv(name, "/before")
        monkeypatch.delenv(name)
    return asked


def test_a_major_resolves_to_its_pinned_binaries(pinned: list[int]) -> None:
    assert server_choice.use_server_options(parsed("--major", "17")) is None
    assert pinned == [17]
    assert os.environ["PG_BIN"] == "/cache/postgresql-17/bin"


def test_every_supported_major_is_a_choice(pinned: list[int]) -> None:
    for major in (14, 15, 16, 17, 18):
        server_choice.use_server_options(parsed("--major", str(major)))
        assert os.environ["PG_BIN"] == f"/cache/postgresql-{major}/bin"
    assert pinned == [14, 15, 16, 17, 18]


def test_a_bin_folder_of_ones_own_needs_pg_ctl(tmp_path: Path, pinned: list[int]) -> None:
    with pytest.raises(SystemExit, match="no pg_ctl"):
        server_choice.use_server_options(parsed("--pg-bin", str(tmp_path)))
    assert "PG_BIN" not in os.environ
    (tmp_path / "pg_ctl").touch()
    assert server_choice.use_server_options(parsed("--pg-bin", str(tmp_path))) is None
    assert os.environ["PG_BIN"] == str(tmp_path) and pinned == []


def test_without_options_the_default_server_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_BIN", "/usr/lib/postgresql/15/bin")
    assert server_choice.use_server_options(parsed()) is None
    assert os.environ["PG_BIN"] == "/usr/lib/postgresql/15/bin"


def test_a_url_is_passed_on_and_names_no_binaries(pinned: list[int]) -> None:
    assert server_choice.use_server_options(parsed("--url", "postgresql://h/db")) == (
        "postgresql://h/db"
    )
    assert "PG_BIN" not in os.environ and pinned == []


def test_binaries_are_refused_while_database_url_names_a_server(
    pinned: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Else the run would measure DATABASE_URL's server under the major's name.
    monkeypatch.setenv("DATABASE_URL", "postgresql://h/db")
    with pytest.raises(SystemExit, match="DATABASE_URL"):
        server_choice.use_server_options(parsed("--major", "18"))
    assert "PG_BIN" not in os.environ


@pytest.mark.parametrize(
    "argv",
    [
        ("--major", "12"),
        ("--major", "17", "--pg-bin", "/usr/lib/postgresql/15/bin"),
        ("--major", "17", "--url", "postgresql://h/db"),
        ("--pg-bin", "/usr/lib/postgresql/15/bin", "--url", "postgresql://h/db"),
    ],
)
def test_an_unpinned_major_and_two_servers_at_once_are_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(SystemExit):
        parsed(*argv)
