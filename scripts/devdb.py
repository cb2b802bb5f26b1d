"""The development database of `make run`: one embedded cluster that stays up
between runs, so that psql can connect after the demo.

    python -m scripts.devdb start|stop|url
"""

from __future__ import annotations

import sys
from pathlib import Path

from provider.testing.embedded_pg import EmbeddedPostgres, free_port

DEV_DIR = Path("/tmp/taskhub-pg-dev")
PORT_FILE = DEV_DIR / "port"


def dev_cluster() -> EmbeddedPostgres:
    port = int(PORT_FILE.read_text()) if PORT_FILE.exists() else free_port()
    cluster = EmbeddedPostgres.create(base_dir=DEV_DIR, port=port)
    cluster.keep_data = True
    return cluster


def start() -> str:
    cluster = dev_cluster()
    url = cluster.start()
    PORT_FILE.write_text(str(cluster.port))
    return url


def stop() -> None:
    dev_cluster().stop()


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "url"
    if command == "start":
        print(start())
    elif command == "stop":
        stop()
        print(f"stopped the development cluster in {DEV_DIR}")
    elif command == "url":
        print(dev_cluster().url)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
