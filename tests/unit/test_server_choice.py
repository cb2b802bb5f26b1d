"""bench/server_choice.py: --pg-bin and --major name the server a benchmark
starts; no database."""

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


def test_a_major_resolves_to_its_pinned_binaries(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []

    def pinned(major: int) -> Path:
        asked.append(major)
        return Path(f"/cache/postgresql-{major}/bin")

    monkeypatch.setattr(pgbinaries, "bin_dir", pinned)
    # Set through monkeypatch first, so that whatever the code under test
    # writes there is undone after the test (the other tests of this process
    # start their servers from PG_BIN).
    monkeypatch.setenv("PG_BIN", "/before")
    chosen = server_choice.use_server_options(parsed("--major", "17"))
    assert chosen == Path("/cache/postgresql-17/bin") and asked == [17]
    assert os.environ["PG_BIN"] == "/cache/postgresql-17/bin"


def test_a_bin_folder_of_ones_own_needs_pg_ctl(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no pg_ctl"):
        server_choice.bin_dir_for(tmp_path, None)
    (tmp_path / "pg_ctl").touch()
    assert server_choice.bin_dir_for(tmp_path, None) == tmp_path


def test_without_options_the_default_server_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PG_BIN", "/usr/lib/postgresql/15/bin")
    assert server_choice.use_server_options(parsed()) is None
    assert os.environ["PG_BIN"] == "/usr/lib/postgresql/15/bin"


def test_a_major_without_pinned_binaries_and_both_options_are_refused() -> None:
    with pytest.raises(SystemExit):
        parsed("--major", "12")
    with pytest.raises(SystemExit):
        parsed("--major", "17", "--pg-bin", "/usr/lib/postgresql/15/bin")
