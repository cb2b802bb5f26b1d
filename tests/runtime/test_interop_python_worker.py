"""A duroxide 0.2.2 orchestration hands a tagged activity to a taskhub-pg
Python worker: duroxide's own workers (default tag filter) leave it alone."""

from __future__ import annotations

from typing import Any

import duroxide

from provider import ActivityContext, ActivityWorker, TagFilter, TaskHub


def test_python_worker_runs_the_activity_tagged_for_it(
    database_url: str, hub_schema: str, hub: TaskHub
) -> None:
    dx_provider = duroxide.PostgresProvider.connect_with_schema(database_url, hub_schema)
    runtime = duroxide.Runtime(dx_provider, duroxide.RuntimeOptions(dispatcher_poll_interval_ms=10))
    rust_side_calls: list[str] = []

    @runtime.register_activity("Thumbnail")
    def thumbnail_in_duroxide(ctx: Any, image: str) -> str:
        rust_side_calls.append(image)  # must never run: the activity is tagged
        return "wrong worker"

    @runtime.register_orchestration("Publish")
    def publish(ctx: Any, image: str) -> Any:
        thumb = yield ctx.schedule_activity("Thumbnail", image).with_tag("python")
        plain = yield ctx.schedule_activity("Thumbnail", "untagged")
        return {"python": thumb, "default": plain}

    python_worker = ActivityWorker(hub, tags=TagFilter.only("python"), idle_poll_ms=10)

    @python_worker.activity("Thumbnail")
    def thumbnail_in_python(ctx: ActivityContext, image: str) -> dict[str, Any]:
        return {"thumbnail": f"{image}.small.png", "tag": ctx.tag, "attempt": ctx.attempt}

    runtime.start()
    try:
        with python_worker:
            client = duroxide.Client(dx_provider)
            client.start_orchestration("publish-1", "Publish", "cat.png")
            result = client.wait_for_orchestration("publish-1", 30_000)
    finally:
        runtime.shutdown(timeout_ms=2_000)

    assert result.status == "Completed", result.error
    assert result.output == {
        "python": {"thumbnail": "cat.png.small.png", "tag": "python", "attempt": 1},
        "default": "wrong worker",
    }
    assert rust_side_calls == ["untagged"]
    assert python_worker.stats.completed == 1
