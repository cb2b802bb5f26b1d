"""The development cluster of `make run`: an embedded cluster that stays up
between runs, so that psql can connect after the demo. scripts/devdb.py is its
command line (`make stop`); the demo and `make revision` start it from here.

Each checkout has a cluster of its own: its folder (data, log and the unix
socket it listens on, mode 0700) is `DEV_DIR` when set, else
/tmp/taskhub-pg-dev-<hash of the checkout's path>. So two checkouts on one
machine never share a cluster, and `make stop` in one leaves the other up.
The cluster opens no TCP port (provider/testing/embedded_pg.py says why), so
other local users cannot reach it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from provider.testing.embedded_pg import EmbeddedPostgres

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


def dev_cluster(folder: Path | None = None) -> EmbeddedPostgres:
    cluster = EmbeddedPostgres.create(base_dir=folder or dev_dir())
    cluster.keep_data = True
    return cluster


def start() -> str:
    """Start the cluster (initialised on first use); its URL."""
    return dev_cluster().start()


def stop() -> None:
    dev_cluster().stop()
