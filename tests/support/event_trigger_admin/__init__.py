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


def _pg_config(bin_dir: Path, option: str) -> str:
    tool = bin_dir / "pg_config"
    if not tool.exists():
        raise BuildError(f"{bin_dir} has no pg_config")
    return subprocess.run(
        [str(tool), option], check=True, capture_output=True, text=True
    ).stdout.strip()


def server_headers(bin_dir: Path) -> Path:
    """The server headers of `bin_dir`'s major."""
    own = Path(_pg_config(bin_dir, "--includedir-server"))
    if (own / "c.h").exists():
        return own
    found = re.search(r"(\d+)", _pg_config(bin_dir, "--version"))
    major = int(found.group(1)) if found else 0
    pinned = Path(_pg_config(pgbinaries.bin_dir(major), "--includedir-server"))
    if not (pinned / "c.h").exists():
        raise BuildError(f"no server headers for PostgreSQL {major}")
    return pinned


def library_for(bin_dir: Path) -> Path:
    """The module built for the server of `bin_dir` (built on first use)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise BuildError("no C compiler (apt-get install -y gcc)")
    version = _pg_config(bin_dir, "--version")
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
