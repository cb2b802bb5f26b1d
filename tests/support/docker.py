"""Is there a Docker engine to run testcontainers against?"""

from __future__ import annotations

import os
from pathlib import Path


def docker_engine_answers() -> bool:
    # The `docker` client alone proves nothing; look for an engine first,
    # without importing the docker package when there is clearly none.
    if not os.environ.get("DOCKER_HOST") and not Path("/var/run/docker.sock").exists():
        return False
    try:
        import docker

        docker.from_env(timeout=1).ping()
    except Exception:
        return False
    return True
