"""Other released duroxide runtimes, each in a cached virtualenv of its own.

One virtualenv holds one duroxide: the suite's own is 0.2.2 (the `runtime`
extra, pinned in requirements/ci.txt). The compatibility tier also runs the
runtime's scenario groups on 0.2.1 (tests/runtime/test_released_runtimes.py),
in a subprocess whose interpreter is a virtualenv holding that release alone.

Each release is installed from requirements/duroxide-<release>.txt (written
by requirements/compile.sh) with the suite's own pinned pip, `--require-hashes
--no-deps --only-binary :all:`: the wheel is checked against the sha256 the
file pins and nothing else is installed or built. The virtualenv is built
once and kept outside the repository, as devkit/pgbinaries.py keeps the
PostgreSQL binaries; a later run finds it there and downloads nothing. Its
folder is named after a digest of the pinned file and of the interpreter it
was made from, so a regenerated file or another Python builds a new one.

    python -m devkit.released_runtimes 0.2.1    # prints that virtualenv's python

The cache is `TASKHUB_PG_RUNTIMES` if set, else /var/cache/taskhub-pg/runtimes
when we are root, else ~/.cache/taskhub-pg/runtimes.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devkit.pins import pins

CHECKOUT = Path(__file__).resolve().parent.parent
# The releases besides the suite's own 0.2.2 that the tier runs. 0.2.0 is not
# one of them: it refuses a hub at startup (docs/platforms.md, "Supported
# duroxide runtimes").
RELEASES = ("0.2.1",)
INSTALL_TIMEOUT_S = 600
# Written last: a folder without it is a build that did not finish.
_DONE = ".installed"


class RuntimeInstallError(RuntimeError):
    """A release with no pinned file, or an install that failed."""


def pinned_file(release: str) -> Path:
    return CHECKOUT / "requirements" / f"duroxide-{release}.txt"


def cache_root() -> Path:
    if env := os.environ.get("TASKHUB_PG_RUNTIMES"):
        return Path(env)
    if os.geteuid() == 0:
        return Path("/var/cache/taskhub-pg/runtimes")
    return Path.home() / ".cache" / "taskhub-pg" / "runtimes"


def python_of(release: str, root: Path | None = None) -> Path:
    """The interpreter of a virtualenv holding duroxide `release` alone,
    built on first use (under a lock: the suite's test processes may ask at
    the same time, and the first one builds while the others wait)."""
    pinned = _checked_pin(release)
    folder = folder_of(release, root)
    python = folder / "bin" / "python"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _held(folder.with_name(folder.name + ".lock")):
        if not (folder / _DONE).exists():
            _build(folder, pinned)
            (folder / _DONE).touch()
    return python


def folder_of(release: str, root: Path | None = None) -> Path:
    """Where the virtualenv of `release` is (or will be) kept."""
    return (root or cache_root()) / _folder_name(release, pinned_file(release))


def _checked_pin(release: str) -> Path:
    """The release's file, refused unless it pins exactly that duroxide, hashed."""
    path = pinned_file(release)
    if not path.exists():
        raise RuntimeInstallError(f"no {path.name} in requirements/: sh requirements/compile.sh")
    found = pins(path.read_text())
    pin = found.get("duroxide")
    if set(found) != {"duroxide"} or pin is None or str(pin.version) != release or not pin.hashes:
        raise RuntimeInstallError(
            f"{path.name} must pin duroxide=={release} alone, with its hashes"
        )
    return path


def _folder_name(release: str, pinned: Path) -> str:
    # A virtualenv is bound to the interpreter it was made from (its `home`).
    digest = hashlib.sha256(pinned.read_bytes())
    digest.update(f"{sys.base_prefix}\0{sys.version}".encode())
    major, minor = sys.version_info[:2]
    return f"duroxide-{release}-py{major}.{minor}-{digest.hexdigest()[:12]}"


def _build(folder: Path, pinned: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    # No pip of its own: the suite's pinned pip installs into it (--python).
    _run([sys.executable, "-m", "venv", "--without-pip", str(folder)])
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(folder / "bin" / "python"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--require-hashes",
            "--no-deps",
            "--only-binary",
            ":all:",
            "-r",
            str(pinned),
        ]
    )


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RuntimeInstallError(f"{' '.join(command[:4])}...: {exc}") from exc
    if done.returncode != 0:
        raise RuntimeInstallError(
            f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-2000:]}"
        )


@contextmanager
def _held(lock_file: Path) -> Iterator[None]:
    with lock_file.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main(argv: list[str]) -> int:
    try:
        for release in argv or RELEASES:
            print(python_of(release))
    except RuntimeInstallError as exc:
        print(f"released_runtimes: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
