"""The development database of `make run`: an embedded cluster that stays up
between runs, so that psql can connect after the demo.

    python -m scripts.devdb start|stop|url

Each checkout has a cluster of its own: its folder (data, log and the unix
socket it listens on, mode 0700: no TCP port, no other local user) is
`DEV_DIR` when set, else /tmp/taskhub-pg-dev-<hash of the checkout's path>.
So two checkouts on one machine never share a cluster, and `make stop` in one
leaves the other up. `url` prints the URL for psql; it carries no password.
"""

from __future__ import annotations

import sys

from devkit.devdb import dev_cluster, dev_dir, start, stop


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "url"
    if command == "start":
        print(start())
    elif command == "stop":
        stop()
        print(f"stopped the development cluster in {dev_dir()}")
    elif command == "url":
        cluster = dev_cluster()
        if not cluster.is_running():
            print(f"no development cluster runs in {dev_dir()}: `make run` starts it")
            return 1
        print(cluster.url)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
