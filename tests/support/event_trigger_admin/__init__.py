"""The event_trigger_admin module (event_trigger_admin.c, beside this file),
built for the server the tests run: a managed service's admin that may
create event triggers without being a superuser.

It is compiled against the server's own headers (`pg_config
--includedir-server` of its bin folder), or, where the server came without
them (Debian's postgresql package), against those of the pinned binaries
of the same major (devkit/pgbinaries.py): a module needs only its major's
headers, and PG_MODULE_MAGIC refuses one built for another. The library
goes to a folder outside the repository that the server's OS user can
read, named by the digest of the source and the server's version, so it is
built once per server.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from devkit import pgbinaries

SOURCE = Path(__file__).with_name("event_trigger_admin.c")


class BuildError(RuntimeError):
    """The module could not be built for this server."""


def _pg_config(bin_dir: Path, option: str) -> str | None:
    tool = bin_dir / "pg_config"
    if not tool.exists():
        return None
    return subprocess.run(
        [str(tool), option], check=True, capture_output=True, text=True
    ).stdout.strip()


def server_version(bin_dir: Path) -> str:
    """What `postgres --version` says, e.g. "postgres (PostgreSQL) 15.18 (Debian ...)"."""
    return subprocess.run(
        [str(bin_dir / "postgres"), "--version"], check=True, capture_output=True, text=True
    ).stdout.strip()


def server_headers(bin_dir: Path) -> Path:
    """The server headers of `bin_dir`'s major."""
    own = _pg_config(bin_dir, "--includedir-server")
    if own is not None and (Path(own) / "c.h").exists():
        return Path(own)
    found = re.search(r"\) (\d+)", server_version(bin_dir))
    if found is None:
        raise BuildError(f"cannot tell the major of {bin_dir}/postgres")
    pinned = _pg_config(pgbinaries.bin_dir(int(found.group(1))), "--includedir-server")
    if pinned is None or not (Path(pinned) / "c.h").exists():
        raise BuildError(f"no server headers for PostgreSQL {found.group(1)}")
    return Path(pinned)


def library_for(bin_dir: Path) -> Path:
    """The module built for the server of `bin_dir` (built on first use)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise BuildError("no C compiler (apt-get install -y gcc)")
    version = server_version(bin_dir)
    digest = hashlib.sha256(SOURCE.read_bytes() + version.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / "taskhub-pg-event-trigger-admin"
    folder.mkdir(mode=0o755, exist_ok=True)
    folder.chmod(0o755)
    library = folder / f"event_trigger_admin-{digest}.so"
    if library.exists():
        return library
    partial = folder / f".{library.name}.{os.getpid()}"
    command = [compiler, "-O2", "-fPIC", "-shared", "-Wall", "-Werror"]
    command += [f"-I{server_headers(bin_dir)}", "-o", str(partial), str(SOURCE)]
    built = subprocess.run(command, capture_output=True, text=True)
    if built.returncode != 0:
        raise BuildError(f"{' '.join(command)}:\n{built.stderr}")
    partial.chmod(0o755)
    partial.replace(library)  # whole or not at all, for a parallel worker
    return library
