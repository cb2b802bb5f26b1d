"""Restarting the tests' own cluster in immediate mode, and waiting until it
accepts connections again (other tests use it after us)."""

from __future__ import annotations

import os
import subprocess
import time

import psycopg

from provider.embedded_pg import SERVICE_USER, EmbeddedPostgres

PG_CTL_TIMEOUT_S = 120


def restart_immediately(cluster: EmbeddedPostgres) -> None:
    command = [
        str(cluster.bin_dir / "pg_ctl"),
        "-D",
        str(cluster.data_dir),
        "-l",
        str(cluster.log_file),  # else the server keeps our stdout pipe open
        "-m",
        "immediate",
        "-w",
        "-t",
        str(PG_CTL_TIMEOUT_S),
        "restart",
    ]
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        command = ["runuser", "-u", SERVICE_USER, "--", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=PG_CTL_TIMEOUT_S + 30)
    if done.returncode != 0 and not cluster.is_running():
        cluster.start()  # the restart left it down: bring it up, or fail loudly
    wait_until_accepting(cluster.url)


def wait_until_accepting(url: str, timeout_s: float = PG_CTL_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with psycopg.connect(url, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
