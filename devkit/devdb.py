"""The development cluster of `make run`: an embedded cluster that stays up
between runs, so that psql can connect after the demo. scripts/devdb.py is its
command line (`make stop`); the demo and `make revision` start it from here.

Each checkout has a cluster of its own: its folder (data, log, socket and the
port it listens on) is `DEV_DIR` when set, else
/tmp/taskhub-pg-dev-<hash of the checkout's path>. So two checkouts on one
machine never share a cluster, and `make stop` in one leaves the other up.
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

from provider.testing.embedded_pg import EmbeddedPostgres, free_port

CHECKOUT = Path(__file__).resolve().parent.parent


def default_dev_dir(checkout: Path) -> Path:
    """The folder of a checkout's cluster. Under /tmp, not in the checkout:
    as root the server runs as the `postgres` user, which must reach it (a
    checkout under /root it cannot), and the socket path must stay short."""
    digest = hashlib.sha256(str(checkout.resolve()).encode()).hexdigest()[:12]
    return Path("/tmp") / f"taskhub-pg-dev-{digest}"


def dev_dir() -> Path:
    """DEV_DIR if set (an empty value counts as unset), else this checkout's folder."""
    configured = os.environ.get("DEV_DIR")
    return Path(configured).resolve() if configured else default_dev_dir(CHECKOUT)


def port_file(folder: Path) -> Path:
    return folder / "port"


def remembered_port(folder: Path) -> int | None:
    path = port_file(folder)
    return int(path.read_text()) if path.exists() else None


def port_is_free(port: int) -> bool:
    """Nothing listens on 127.0.0.1:port (the only address the cluster listens on)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def dev_cluster(folder: Path | None = None) -> EmbeddedPostgres:
    folder = folder or dev_dir()
    cluster = EmbeddedPostgres.create(base_dir=folder, port=remembered_port(folder) or free_port())
    cluster.keep_data = True
    return cluster


def start() -> str:
    """Start the cluster (initialised on first use); its URL."""
    cluster = dev_cluster()
    # A stopped cluster's remembered port may have been taken since (by
    # another checkout's cluster, say): then it moves to a free one.
    if not cluster.is_running() and not port_is_free(cluster.port):
        cluster.port = free_port()
    url = cluster.start()
    port_file(cluster.base_dir).write_text(str(cluster.port))
    return url


def stop() -> None:
    dev_cluster().stop()
