"""A user's program that uses the application client type-checks under
`mypy --strict`, and a wrong setting or status does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import REPO

SAMPLE = REPO / "docs" / "examples" / "start_and_wait.py"


def strict_mypy(*files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *map(str, files)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_sample_program_and_its_mistakes_under_mypy_strict(tmp_path: Path) -> None:
    mistakes = tmp_path / "mistakes.py"
    mistakes.write_text(
        "from provider import Client\n"
        'client = Client.connect("postgresql://x", "s", pool_max_size="10")\n'
        'client.find(status="failed")\n'
    )
    checked = strict_mypy(SAMPLE, mistakes)
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert not [line for line in errors if SAMPLE.name in line], checked.stdout
    report = checked.stdout
    assert any("mistakes.py:2" in line and "pool_max_size" in line for line in errors), report
    assert any("mistakes.py:3" in line and "status" in line for line in errors), report


def test_the_sample_program_starts_once_and_prints_the_result(
    database_url: str, hub_schema: str
) -> None:
    import duroxide

    runtime = duroxide.Runtime(
        duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema),
        duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10),
    )

    @runtime.register_orchestration("ProcessOrder")
    def process_order(ctx: Any, order: dict[str, Any]) -> Any:
        yield ctx.schedule_timer(10)
        return f"order {order['id']} shipped"

    runtime.start()
    try:
        done = subprocess.run(
            [sys.executable, str(SAMPLE)],
            env={**os.environ, "DATABASE_URL": database_url, "TASKHUB_SCHEMA": hub_schema},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        runtime.shutdown(timeout_ms=2_000)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "started: True, repeat started: False",
        "refused: instance order-7 already exists with orchestration ProcessOrder, not"
        " RefundOrder: a repeated start must be the same",
        "order-7 Completed: order 7 shipped",
    ]
