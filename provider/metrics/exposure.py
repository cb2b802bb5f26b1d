"""Who may read /metrics and /healthz: on this machine's loopback anyone on
it; beyond loopback only a scraper that sends the bearer token, unless the
operator said in so many words that anyone may (`--insecure-no-auth`)."""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment


class ExposedWithoutAuthentication(ValueError):
    """A non-loopback address asked for with no token and no explicit consent."""


def is_loopback(address: str) -> bool:
    """Is `address` (an IP, as getaddrinfo gives it) this machine's loopback?"""
    try:
        return ipaddress.ip_address(address.partition("%")[0]).is_loopback
    except ValueError:
        return False


def refuse_unless_protected(address: str, port: int, token: str | None, insecure: bool) -> None:
    """Raise before anything listens on a reachable address nobody guards."""
    if token is None and not insecure and not is_loopback(address):
        raise ExposedWithoutAuthentication(
            f"{address} port {port} is reachable from other machines and no token is"
            " configured: give --token-file (Prometheus sends it as a bearer token),"
            " serve on 127.0.0.1 behind a proxy that authenticates, or pass"
            " --insecure-no-auth to serve it to anyone"
        )


def require_bearer(app: WSGIApplication, token: str) -> WSGIApplication:
    """`app` for requests carrying `Authorization: Bearer <token>` only; a 401
    for the others (compared in constant time)."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        sent = str(environ.get("HTTP_AUTHORIZATION", "")).encode("latin-1", "replace")
        if hmac.compare_digest(sent, expected):
            return app(environ, start_response)
        body = b"a bearer token is required\n"
        start_response(
            "401 Unauthorized",
            [
                ("Content-Type", "text/plain; charset=utf-8"),
                ("Content-Length", str(len(body))),
                ("WWW-Authenticate", 'Bearer realm="taskhub-pg metrics"'),
            ],
        )
        return [body]

    return guarded


def read_token(path: str) -> str:
    """The token in `path` (surrounding whitespace dropped): refused when empty
    or shorter than 16 characters, which a scraper's guesses could find."""
    with open(path, encoding="utf-8") as file:
        token = file.read().strip()
    if len(token) < 16:
        raise ValueError(f"the token in {path} must be at least 16 characters")
    if any(ord(char) < 0x21 or ord(char) > 0x7E for char in token):
        raise ValueError(f"the token in {path} must be printable ASCII without spaces")
    return token
