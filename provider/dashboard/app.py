"""The dashboard's Starlette application: one route per page, each a read
on a pooled autocommit connection, rendered by a Jinja2 template.

    app = dashboard_app(url, schema)      # serve with uvicorn (taskhub-pg dashboard)

Pages, at URLs that links and scripts can rely on:
    /                       overview (its panel refreshes itself: /panels/overview)
    /instances              filter by status, name and time; pages by the last ID
    /instances/{id}         executions, history timeline, queued messages, KV, lease
    /dead-letters           dead letters and shielded transient failures
    POST /actions/{name}    requeue, release-lease, cancel, delete, prune (--allow-actions)
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from provider.dashboard import pages
from provider.dashboard.actions import (
    ACTIONS,
    CSRF_COOKIE,
    CSRF_FIELD,
    ActionRefused,
    CsrfTokens,
    log,
    permitted,
)
from provider.dashboard.hub import Hub
from provider.deploy import runbook
from provider.errors import TaskHubError
from provider.types import INSTANCE_STATUSES

HERE = Path(__file__).parent
PAGE_SIZE = 100
REFRESH_S = 5
ACTIONS_OFF = "actions are off: start the dashboard with --allow-actions to take them"
NOT_PERMITTED = "the dashboard's database role may not {}: grant it the operator role"
BAD_TOKEN = "no valid CSRF token: reload the page the form is on, and try again"


def dashboard_app(
    url: str, schema: str, *, allow_actions: bool = False, refresh_s: float = REFRESH_S
) -> Starlette:
    """The dashboard of one hub; with allow_actions, its pages carry the
    actions' forms and /actions/{name} takes them (provider/dashboard/actions.py)."""
    hub = Hub(url, schema)
    tokens = CsrfTokens()
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["moment"] = pages.moment_text
    templates.env.globals.update(schema=schema, refresh_s=REFRESH_S, actions_allowed=allow_actions)

    may_take: set[str] = set()  # what the role may do: read when the app starts

    def render(
        request: Request, template: str, status_code: int = 200, **values: Any
    ) -> HTMLResponse:
        """The page; with actions on, the CSRF token its forms carry, in a
        cookie too (kept while it is one of ours, else a new one)."""
        token = request.cookies.get(CSRF_COOKIE)
        if allow_actions and not tokens.valid(token, token):
            token = tokens.issue()
        page = templates.TemplateResponse(
            request,
            template,
            {**values, "csrf": token, "permitted": may_take},
            status_code=status_code,
        )
        if allow_actions and token is not None:
            page.set_cookie(CSRF_COOKIE, token, httponly=True, samesite="strict")
        return page

    async def act(request: Request) -> Response:
        """A POST of an action's form: refused without --allow-actions or a
        valid token; asks first; then acts and logs what it did."""
        name = request.path_params["name"]
        form = {key: str(value) for key, value in (await request.form()).items()}
        shown = {key: value for key, value in form.items() if key != CSRF_FIELD}
        client = request.client.host if request.client else "?"
        if not allow_actions:
            log.warning("refused %s %s from %s: actions are off", name, shown, client)
            return render(request, "refused.html", 403, message=ACTIONS_OFF)
        if not tokens.valid(request.cookies.get(CSRF_COOKIE), form.get(CSRF_FIELD)):
            log.warning("refused %s %s from %s: no valid CSRF token", name, shown, client)
            return render(request, "refused.html", 403, message=BAD_TOKEN)
        action = ACTIONS.get(name)
        if action is None:
            return render(request, "refused.html", 404, message=f"no action {name}")
        if name not in may_take:
            log.warning("refused %s %s from %s: the role may not", name, shown, client)
            return render(request, "refused.html", 403, message=NOT_PERMITTED.format(name))
        if form.get("confirmed") != "yes":
            return render(
                request, "confirm.html", action=name, question=action.question(form), form=shown
            )
        try:
            done = await run_in_threadpool(action.run, hub, form)
        except ActionRefused as error:
            log.warning("refused %s %s from %s: %s", name, shown, client, error.message)
            return render(request, "refused.html", error.status, message=error.message)
        except TaskHubError as error:
            log.warning("refused %s %s from %s: %s", name, shown, client, error.message)
            return render(request, "refused.html", 409, message=error.message)
        log.info("%s %s from %s: %s", name, shown, client, done)
        return render(request, "done.html", message=done)

    def overview(request: Request) -> HTMLResponse:
        return render(request, "overview.html", **_overview(hub))

    def overview_panel(request: Request) -> HTMLResponse:
        return render(request, "overview_panel.html", **_overview(hub))

    def instances(request: Request) -> HTMLResponse:
        """The instances the filters select; a filter that is no status or no
        time is a 400 naming it, not a list that ignores it."""
        query = request.query_params
        status = query.get("status") or None
        try:
            if status not in (None, *INSTANCE_STATUSES):
                raise ValueError(f"status {status!r} is none of {', '.join(INSTANCE_STATUSES)}")
            moments = {name: pages.moment(name, query.get(name)) for name in pages.TIME_FILTERS}
        except ValueError as error:  # a filter read wrongly would list the wrong instances
            return render(request, "refused.html", 400, message=str(error))
        found = hub.calls.find_instances(
            status=status,
            orchestration_name=query.get("name") or None,
            started_after=moments["started_after"],
            started_before=moments["started_before"],
            updated_after=moments["updated_after"],
            updated_before=moments["updated_before"],
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
            values["trace_id"] = runbook.trace_id_of(conn, schema, instance_id)
        return render(request, "instance.html", instance_id=instance_id, **values)

    def dead_letters(request: Request) -> HTMLResponse:
        with hub.connection() as conn:
            letters = runbook.read_view(conn, schema, "dead-letters", 200)
            shielded = runbook.read_view(conn, schema, "shielded", 200)
        return render(request, "dead_letters.html", letters=letters, shielded=shielded)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        hub.open()
        if allow_actions:
            may_take.update(permitted(hub))
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
            Route("/actions/{name}", act, methods=["POST"]),
            Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        ],
        lifespan=lifespan,
    )


def _overview(hub: Hub) -> dict[str, Any]:
    with hub.connection() as conn:
        return pages.overview_values(runbook.overview(conn, hub.schema))
