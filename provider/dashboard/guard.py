"""The door of the dashboard: an ASGI wrapper around the whole Starlette
app, so that what it does holds for every page, static file and error
(Starlette's own 500 included). In order, before any route runs:

1. every response gets the security headers (no framing, no sniffing, no
   referrer, no caching; a CSP that allows this origin only);
2. a Host that is not in the allowlist is a 400 (a DNS-rebinding page
   names its own host: it never reaches a page, nor a redirect built on it);
3. a NUL in the path or the query is a 400 (PostgreSQL text cannot hold one);
4. the request is authenticated (sign_in.py), else 401; a sign-in its user
   or address must wait for is a 429 with Retry-After, before any password
   check; a proxy's user header sent twice is a 400;
5. a POST from another site (Origin, Sec-Fetch-Site) is a 403.

The identity goes to the route in scope["user"], the client as the audit log
names it in scope["taskhub.client"].
"""

from __future__ import annotations

import logging

from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from provider.dashboard.access import (
    AccessPolicy,
    basic_credentials,
    client_address,
    client_network,
)
from provider.dashboard.sign_in import Authenticator, Refused
from provider.host_headers import host_name

log = logging.getLogger("provider.dashboard.access")

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; frame-ancestors 'none'; base-uri 'none';"
    " form-action 'self'; object-src 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
REALM = 'Basic realm="taskhub-pg dashboard", charset="UTF-8"'
SAFE_METHODS = ("GET", "HEAD")


class Guard:
    def __init__(
        self, app: ASGIApp, policy: AccessPolicy, authenticator: Authenticator | None = None
    ) -> None:
        self.app, self.policy = app, policy
        self.authenticator = authenticator or Authenticator(policy)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # no websockets here
            await send({"type": "websocket.close", "code": 1008})
            return
        send = _with_security_headers(send)
        headers = Headers(scope=scope)
        peer = scope["client"][0] if scope.get("client") else None
        forwarded_for = headers.get("x-forwarded-for")
        client = client_address(self.policy, peer, forwarded_for)
        refusal = self._refusal_before_identity(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        network = client_network(self.policy, peer, forwarded_for)
        who = await self.authenticator.identify(headers, peer, network)
        if who is None:
            refusal = self._unauthenticated(headers, client)
        elif isinstance(who, Refused):
            retry = {"retry-after": str(who.retry_after_s)} if who.retry_after_s else None
            refusal = _plain(who.status, who.message, retry)
        elif scope["method"] not in SAFE_METHODS:
            refusal = _cross_site(headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        scope["user"], scope["taskhub.client"] = who, client
        await self.app(scope, receive, send)

    def _refusal_before_identity(self, scope: Scope, headers: Headers) -> PlainTextResponse | None:
        host = headers.get("host")
        if not self.policy.host_allowed(host):
            name = host_name(host) or host or ""
            return _plain(
                400,
                f"host {name[:100]!r} is not one this dashboard answers to:"
                " start it with --allowed-host NAME to add it",
            )
        query = scope.get("query_string", b"").lower()
        if "\0" in scope["path"] or b"\0" in query or b"%00" in query:
            return _plain(400, "a parameter holds a NUL character: nothing can be named so")
        return None

    def _unauthenticated(self, headers: Headers, client: str) -> PlainTextResponse:
        tried = basic_credentials(headers.get("authorization"))
        if tried is not None:  # a wrong password or name, not a first visit
            log.warning("sign-in refused for user %r from %r", tried[0][:100], client)
        if self.policy.accounts:
            return _plain(
                401,
                "sign in: this dashboard asks for a user and password",
                {"www-authenticate": REALM},
            )
        return _plain(
            403, "not signed in: this dashboard takes its users from the authenticating proxy"
        )


def _cross_site(headers: Headers) -> PlainTextResponse | None:
    """A browser names where a POST comes from; from anywhere but this
    origin, it is refused. (A script without a browser sends neither header:
    it still needs the user's credentials and both tokens.)

    Under `Referrer-Policy: no-referrer` a browser sends `Origin: null` with
    its forms, so a same-origin Sec-Fetch-Site (which no page can set) is
    what vouches for those."""
    site = headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return _plain(403, f"refused a POST from another site (Sec-Fetch-Site: {site[:40]!r})")
    origin = headers.get("origin")
    if origin is None or (origin == "null" and site == "same-origin"):
        return None
    _, separator, netloc = origin.partition("://")
    host = (headers.get("host") or "").lower()
    if not separator or netloc.rstrip("/").lower() != host:
        return _plain(403, f"refused a POST from another origin ({origin[:100]!r})")
    return None


def _plain(status: int, message: str, headers: dict[str, str] | None = None) -> PlainTextResponse:
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS.items():
                headers[name] = value
        await send(message)

    return sending
