"""The door of the dashboard: an ASGI wrapper around the whole Starlette
app, so that what it does holds for every page, static file and error
(Starlette's own 500 included). In order, before any route runs:

1. every response gets the security headers (no framing, no sniffing, no
   referrer, no caching; a CSP that allows this origin only);
2. a Host that is not in the allowlist is a 400 (a DNS-rebinding page
   names its own host: it never reaches a page, nor a redirect built on it);
3. a NUL in the path or the query is a 400 (PostgreSQL text cannot hold one);
4. the request is authenticated (access.py), else 401;
5. a POST from another site (Origin, Sec-Fetch-Site) is a 403.

The identity goes to the route in scope["user"], the client as the audit log
names it in scope["taskhub.client"].
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from provider.dashboard.access import (
    ANONYMOUS,
    AccessPolicy,
    Identity,
    basic_credentials,
    client_address,
    host_name,
)
from provider.dashboard.passwords import Account, decoy

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

# One password check (scrypt, ~0.1 s and 32 MiB) at a time per event loop: a
# flood of wrong passwords queues up here instead of taking every thread.
_checks: RunVar[CapacityLimiter] = RunVar("taskhub_dashboard_password_checks")


def _check_limiter() -> CapacityLimiter:
    try:
        return _checks.get()
    except LookupError:
        limiter = CapacityLimiter(1)
        _checks.set(limiter)
        return limiter


class Authenticator:
    """Who a request is. A password that matched once is remembered as a
    digest keyed with a secret of this process (never the password), so
    the next request of that user costs an HMAC, not a scrypt."""

    def __init__(self, policy: AccessPolicy) -> None:
        self.policy = policy
        self._key = secrets.token_bytes(32)
        self._verified: dict[str, bytes] = {}  # only names of the accounts: bounded
        self._decoy = decoy()

    async def identify(self, headers: Headers, peer: str | None) -> Identity | None:
        policy = self.policy
        if policy.open:
            return ANONYMOUS
        if policy.proxy_header and policy.trusts(peer):
            found = policy.proxy_identity(headers.get(policy.proxy_header))
            if found is not None:
                return found
        credentials = basic_credentials(headers.get("authorization"))
        if credentials is None or not policy.accounts:
            return None
        user, password = credentials
        digest = hmac.new(self._key, f"{user}\0{password}".encode(), hashlib.sha256).digest()
        account = policy.accounts.get(user)
        if hmac.compare_digest(self._verified.get(user, b""), digest) and account is not None:
            return Identity(user, account.may_act, "basic")
        matched = await anyio.to_thread.run_sync(
            _matches, account or self._decoy, password, limiter=_check_limiter()
        )
        if account is None or not matched:
            return None
        self._verified[user] = digest
        return Identity(user, account.may_act, "basic")


def _matches(account: Account, password: str) -> bool:
    return account.matches(password)


class Guard:
    def __init__(self, app: ASGIApp, policy: AccessPolicy) -> None:
        self.app, self.policy = app, policy
        self.authenticator = Authenticator(policy)

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
        client = client_address(self.policy, peer, headers.get("x-forwarded-for"))
        refusal = self._refusal_before_identity(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        who = await self.authenticator.identify(headers, peer)
        if who is None:
            refusal = self._unauthenticated(headers, client)
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
            return _plain(401, "sign in: this dashboard asks for a user and password", REALM)
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


def _plain(status: int, message: str, challenge: str | None = None) -> PlainTextResponse:
    headers = {"www-authenticate": challenge} if challenge else None
    return PlainTextResponse(message + "\n", status_code=status, headers=headers)


def _with_security_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in SECURITY_HEADERS.items():
                headers[name] = value
        await send(message)

    return sending
