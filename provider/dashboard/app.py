"""The dashboard's Starlette application: one route per page, each a read
on a pooled autocommit connection, rendered by a Jinja2 template.

    app = dashboard_app(url, schema)      # serve with uvicorn (taskhub-pg dashboard)

Pages, at URLs that links and scripts can rely on:
    /                       overview (its panel refreshes itself: /panels/overview)
    /instances              filter by status, name and time; pages by the last ID
    /instances/{id}         executions, history timeline, queued messages, KV, lease
    /dead-letters           dead letters and shielded transient failures
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from provider.client.task_hub import TaskHub
from provider.dashboard import pages
from provider.deploy import runbook
from provider.types import INSTANCE_STATUSES

HERE = Path(__file__).parent
PAGE_SIZE = 100
REFRESH_S = 5


class Hub:
    """What the pages read through: a small pool for the runbook's reads, and
    a TaskHub for find_instances (the same call `taskhub-pg inspect instances` makes)."""

    def __init__(self, url: str, schema: str) -> None:
        self.schema = schema
        self.pool = ConnectionPool(
            url, min_size=1, max_size=4, kwargs={"autocommit": True}, open=False
        )
        self.url = url
        self.task_hub: TaskHub | None = None

    def open(self) -> None:
        self.pool.open(wait=True, timeout=10)
        self.task_hub = TaskHub.connect(self.url, self.schema, pool_min_size=1)

    def close(self) -> None:
        if self.task_hub is not None:
            self.task_hub.close()
        self.pool.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        with self.pool.connection() as conn:
            yield conn

    @property
    def calls(self) -> TaskHub:
        assert self.task_hub is not None, "the dashboard's hub is not open"
        return self.task_hub


def dashboard_app(url: str, schema: str) -> Starlette:
    hub = Hub(url, schema)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(schema=schema, refresh_s=REFRESH_S)

    def render(request: Request, template: str, **values: Any) -> HTMLResponse:
        return templates.TemplateResponse(request, template, values)

    def overview(request: Request) -> HTMLResponse:
        return render(request, "overview.html", **_overview(hub))

    def overview_panel(request: Request) -> HTMLResponse:
        return render(request, "overview_panel.html", **_overview(hub))

    def instances(request: Request) -> HTMLResponse:
        query = request.query_params
        status = query.get("status") or None
        if status not in (None, *INSTANCE_STATUSES):
            status = None
        found = hub.calls.find_instances(
            status=status,
            orchestration_name=query.get("name") or None,
            started_after=pages.moment(query.get("started_after")),
            started_before=pages.moment(query.get("started_before")),
            after=query.get("after") or None,
            limit=PAGE_SIZE,
        )
        next_after = found[-1].instance_id if len(found) == PAGE_SIZE else None
        return render(
            request,
            "instances.html",
            instances=found,
            statuses=INSTANCE_STATUSES,
            filters=dict(query),
            next_after=next_after,
        )

    def instance(request: Request) -> Response:
        instance_id = request.path_params["instance_id"]
        with hub.connection() as conn:
            try:
                report = runbook.read_instance(conn, schema, instance_id)
            except runbook.RunbookError as error:
                return render(request, "not_found.html", message=str(error))
            values = pages.instance_values(report, runbook.history_of(conn, schema, instance_id))
            values["kv"] = runbook.kv_of(conn, schema, instance_id)
            values["children"] = runbook.children_of(conn, schema, instance_id)
        return render(request, "instance.html", instance_id=instance_id, **values)

    def dead_letters(request: Request) -> HTMLResponse:
        with hub.connection() as conn:
            letters = runbook.read_view(conn, schema, "dead-letters", 200)
            shielded = runbook.read_view(conn, schema, "shielded", 200)
        return render(request, "dead_letters.html", letters=letters, shielded=shielded)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        hub.open()
        try:
            yield
        finally:
            hub.close()

    return Starlette(
        routes=[
            Route("/", overview),
            Route("/panels/overview", overview_panel),
            Route("/instances", instances),
            Route("/instances/{instance_id:path}", instance),
            Route("/dead-letters", dead_letters),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ],
        lifespan=lifespan,
    )


def _overview(hub: Hub) -> dict[str, Any]:
    with hub.connection() as conn:
        return pages.overview_values(runbook.overview(conn, hub.schema))
