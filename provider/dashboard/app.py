"""The dashboard's Starlette application: one route per page, each a read
on a pooled autocommit connection, rendered by a Jinja2 template, behind
the guard (guard.py: headers, Host, sign-in, same-origin POSTs).

    app = dashboard_app(url, schema, access=policy)   # serve with uvicorn (taskhub-pg dashboard)

Pages, at URLs that links and scripts can rely on:
    /                       overview (its panel refreshes itself: /panels/overview)
    /instances              filter by status, name and time; pages by the last ID
    /instances/{id}         executions, history timeline, queued messages, KV, lease
    /dead-letters           dead letters and shielded transient failures
    POST /actions/{name}    requeue, release-lease, cancel, delete, prune (--allow-actions):
                            the question first, then the act (actions.py)
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
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates
from starlette.types import ASGIApp

from provider.dashboard import audit, pages
from provider.dashboard.access import AccessPolicy, Identity
from provider.dashboard.actions import (
    ACTIONS,
    CONFIRMATION_FIELD,
    CONTROL_FIELDS,
    CSRF_COOKIE,
    CSRF_FIELD,
    ActionRefused,
    permitted,
)
from provider.dashboard.forms import FormRefused, check_headers, read_form
from provider.dashboard.guard import Guard
from provider.dashboard.hub import STATEMENT_TIMEOUT_MS, Hub
from provider.dashboard.paths import checked_root_path
from provider.dashboard.sign_in import Authenticator
from provider.dashboard.tokens import Confirmations, CsrfTokens, TokenRefused, hub_secret
from provider.errors import InstanceNotFound, TaskHubError
from provider.hub_rows import plain
from provider.types import INSTANCE_STATUSES

HERE = Path(__file__).parent
PAGE_SIZE = 100
REFRESH_S = 5
OLDER_THAN_SEARCH = (
    "this hub's schema is older than revision 0028: searching by ID prefix or a part of"
    " the name needs it (taskhub-pg upgrade)"
)
ACTIONS_OFF = "actions are off: start the dashboard with --allow-actions to take them"
NOT_PERMITTED = "the dashboard's database role may not {}: grant it the operator role"
VIEWER_ONLY = "{} may only read: actions are for the users listed as operators"
NO_COOKIE = "no session cookie: open the page the form is on, and try again"
BAD_TOKEN = "no valid CSRF token: reload the page the form is on, and try again"
NOBODY = Identity("nobody", False, "none")
TIMED_OUT = (
    "the hub did not answer within {:g} s (the dashboard's statement timeout):"
    " narrow the search, or try again when the hub is less busy"
)
QUERY_CANCELED = "57014"


def dashboard_app(
    url: str,
    schema: str,
    *,
    allow_actions: bool = False,
    refresh_s: float = REFRESH_S,
    access: AccessPolicy | None = None,
    confirmations: Confirmations | None = None,
    root_path: str = "",
    secret: bytes | None = None,
    statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
    authenticator: Authenticator | None = None,
) -> ASGIApp:
    """The dashboard of one hub, behind its guard. Without `access`, it asks
    nobody to sign in and answers to the loopback names only. With
    allow_actions, its pages carry the actions' forms for the users who may
    act, and /actions/{name} takes them. With `root_path` (like /taskhub),
    every page is at that sub-path and every link carries it, for a proxy
    that passes the path on as it came. With `secret` (tokens.configured_secret),
    its CSRF tokens and confirmations are good on every replica given the
    same; without, on this process only. Each statement it runs is cut off
    after `statement_timeout_ms`. `authenticator` signs in for `access`
    (by default a new one: tests give theirs a clock)."""
    prefix = checked_root_path(root_path)
    policy = access or AccessPolicy()
    hub = Hub(url, schema, statement_timeout_ms=statement_timeout_ms)
    key = hub_secret(secret, schema) if secret is not None else None
    csrf = CsrfTokens(key)
    confirming = confirmations or Confirmations(secret=key)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["moment"] = pages.moment_text
    templates.env.globals.update(schema=schema, refresh_s=REFRESH_S, root=prefix)

    may_take: set[str] = set()  # what the role may do: read when the app starts

    def render(
        request: Request, template: str, status_code: int = 200, **values: Any
    ) -> HTMLResponse:
        """The page; with actions on, the CSRF token its forms carry, in a
        cookie too (kept while it is one of ours, else a new one)."""
        who = user_of(request)
        acting = allow_actions and who.may_act
        token = request.cookies.get(CSRF_COOKIE)
        if acting and not csrf.valid(token, token):
            token = csrf.issue()
        page = templates.TemplateResponse(
            request,
            template,
            {
                **values,
                "csrf": token,
                "permitted": may_take,
                "actions_allowed": acting,
                "actions_on": allow_actions,
                "user": who,
            },
            status_code=status_code,
        )
        if acting and token is not None:
            page.set_cookie(
                CSRF_COOKIE, token, path=prefix or "/", httponly=True, samesite="strict"
            )
        return page

    async def act(request: Request) -> Response:
        """A POST of an action. Everything the headers can refuse is refused
        before the body is read; then the form's CSRF token; then either the
        question (with a confirmation) or, given a good confirmation, the act."""
        name = request.path_params["name"]
        who = user_of(request)
        client = str(request.scope.get("taskhub.client", "?"))
        form: dict[str, str] = {}

        def refuse(status: int, message: str) -> Response:
            shown = {key: value for key, value in form.items() if key not in CONTROL_FIELDS}
            audit.refused(name, shown, who, client, message)  # the tokens stay unlogged
            return render(request, "refused.html", status, message=message)

        action = ACTIONS.get(name)
        if not allow_actions:
            return refuse(403, ACTIONS_OFF)
        if not who.may_act:
            return refuse(403, VIEWER_ONLY.format(who.name))
        if action is None:
            return refuse(404, f"no action {name[:40]!r}")
        if name not in may_take:
            return refuse(403, NOT_PERMITTED.format(name))
        if not request.cookies.get(CSRF_COOKIE):
            return refuse(403, NO_COOKIE)
        try:
            check_headers(request.headers)
            form = await read_form(request)
        except FormRefused as error:
            return refuse(error.status, error.message)
        if not csrf.valid(request.cookies.get(CSRF_COOKIE), form.get(CSRF_FIELD)):
            return refuse(403, BAD_TOKEN)
        try:
            target = action.target(form)
        except ActionRefused as error:
            return refuse(error.status, error.message)
        confirmation = form.get(CONFIRMATION_FIELD)
        if confirmation is None:
            return render(
                request,
                "confirm.html",
                action=name,
                question=action.question(target),
                target=target,
                confirmation=confirming.issue(name, target, who.name),
            )
        try:
            confirming.redeem(confirmation, name, target, who.name)
            done = await run_in_threadpool(action.run, hub, target)
        except TokenRefused as error:
            return refuse(403, f"{error}: ask again from the page")
        except ActionRefused as error:
            return refuse(error.status, error.message)
        except TaskHubError as error:
            return refuse(409, error.message)
        audit.taken(name, target, who, client, done)
        return render(request, "done.html", message=done)

    def overview(request: Request) -> HTMLResponse:
        return render(request, "overview.html", **_overview(hub))

    def overview_panel(request: Request) -> HTMLResponse:
        return render(request, "overview_panel.html", **_overview(hub))

    def instances(request: Request) -> HTMLResponse:
        """The instances the search selects; a filter that is no status or no
        time is a 400 naming it, not a list that ignores it."""
        query = request.query_params
        status = query.get("status") or None
        try:
            if status is not None and status not in INSTANCE_STATUSES:
                raise ValueError(
                    f"status {status[:40]!r} is none of {', '.join(INSTANCE_STATUSES)}"
                )
            moments = {name: pages.moment(name, query.get(name)) for name, _ in pages.TIME_FILTERS}
        except ValueError as error:  # a filter read wrongly would list the wrong instances
            return render(request, "refused.html", 400, message=str(error))
        try:
            found = _instance_page(
                hub,
                query.get("after") or None,
                status=status,
                id_prefix=query.get("id", "").strip() or None,
                name_contains=query.get("name", "").strip() or None,
                **moments,
            )
        except TaskHubError as error:
            if error.sqlstate != "42883":
                raise
            return render(request, "refused.html", 409, message=OLDER_THAN_SEARCH)
        next_after = found[-1].instance_id if len(found) == PAGE_SIZE else None
        return render(
            request,
            "instances.html",
            instances=found,
            statuses=INSTANCE_STATUSES,
            time_filters=pages.TIME_FILTERS,
            presets=pages.PRESETS,
            filters={name: value for name, value in query.items() if name != "after"},
            next_after=next_after,
        )

    def listing(request: Request) -> HTMLResponse:
        """One of the overview's lists (leases, poison candidates, stuck
        instances), as `taskhub-pg inspect` reads it: where each count leads."""
        name = request.path_params["name"]
        if name not in pages.LISTS:
            return render(request, "not_found.html", 404, message=f"no list {name[:40]!r}")
        rows = plain(hub.run(hub.plans.read_view(name, PAGE_SIZE)))
        return render(request, "listing.html", name=name, title=pages.LISTS[name], rows=rows)

    def instance(request: Request) -> Response:
        instance_id = request.path_params["instance_id"]
        try:
            report = hub.run(hub.plans.read_instance(instance_id))
        except InstanceNotFound as error:
            return render(request, "not_found.html", message=error.message)
        values = pages.instance_values(report, hub.run(hub.plans.history_of(instance_id)))
        values["kv"] = plain(hub.run(hub.plans.kv_of(instance_id)))
        values["children"] = plain(hub.run(hub.plans.children_of(instance_id)))
        values["trace_id"] = hub.run(hub.plans.trace_id_of(instance_id))
        return render(request, "instance.html", instance_id=instance_id, **values)

    def dead_letters(request: Request) -> HTMLResponse:
        letters = plain(hub.run(hub.plans.read_view("dead-letters", 200)))
        shielded = plain(hub.run(hub.plans.read_view("shielded", 200)))
        return render(request, "dead_letters.html", letters=letters, shielded=shielded)

    def schedules(request: Request) -> HTMLResponse:
        found = pages.schedule_values(hub.run(hub.plans.schedule_listing()))
        return render(request, "schedules.html", schedules=found)

    def flow(request: Request) -> HTMLResponse:
        """The flow rules (docs/flow-control.md): what is paused or limited,
        how much of each limit is in use, and who changed it last."""
        rules = plain(hub.run(hub.plans.flow_rules_of_any_revision()))
        return render(request, "flow.html", rules=rules)

    def timed_out(request: Request, error: Exception) -> Response:
        """A statement cut off by the timeout: a 503 saying so, not a 500."""
        if not (isinstance(error, TaskHubError) and error.sqlstate == QUERY_CANCELED):
            raise error
        message = TIMED_OUT.format(statement_timeout_ms / 1000)
        return render(request, "timed_out.html", 503, message=message)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        hub.open()
        if allow_actions:
            may_take.update(permitted(hub))
        try:
            yield
        finally:
            hub.close()

    routes = [
        Route("/", overview),
        Route("/panels/overview", overview_panel),
        Route("/instances", instances),
        Route("/instances/{instance_id:path}", instance),
        Route("/lists/{name}", listing),
        Route("/dead-letters", dead_letters),
        Route("/schedules", schedules),
        Route("/flow", flow),
        Route("/actions/{name}", act, methods=["POST"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    if prefix:  # the overview at /taskhub as at /taskhub/, and no redirect inside either
        routes = [Route(prefix, overview), Mount(prefix, Router(routes, redirect_slashes=False))]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={TaskHubError: timed_out},
    )
    # No redirects: Starlette's "add the slash" one is built on the request's Host.
    app.router.redirect_slashes = False
    return Guard(app, policy, authenticator or Authenticator(policy))


def user_of(request: Request) -> Identity:
    """Who the guard signed in (ANONYMOUS when nobody is asked to); a request
    that did not pass the guard is nobody, and may not act."""
    found = request.scope.get("user")
    return found if isinstance(found, Identity) else NOBODY


def _instance_page(hub: Hub, after: str | None, **filters: Any) -> list[Any]:
    """One page of instances after `after`; when `after` names no instance (a
    stale next-page link: it was deleted or pruned), the list has ended."""
    if after is not None and not hub.run(hub.plans.instance_exists(after)):
        return []
    try:
        return list(hub.calls.find_instances(after=after, limit=PAGE_SIZE, **filters))
    except TaskHubError:
        # Deleted since the check above: the list has ended.
        if after is None or hub.run(hub.plans.instance_exists(after)):
            raise
        return []


def _overview(hub: Hub) -> dict[str, Any]:
    return pages.overview_values(hub.run(hub.plans.overview()), hub.status_counts())
