"""Who may read /metrics and /healthz: on this machine's loopback anyone on
it; beyond loopback only a scraper that sends the bearer token, unless the
operator said in so many words that anyone may (`--insecure-no-auth`)."""

from __future__ import annotations

import hmac
import ipaddress
import os
from collections.abc import Iterable
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

from provider.host_headers import LOOPBACK_HOSTS, host_name
from provider.metrics.health import log


class ExposedWithoutAuthentication(ValueError):
    """A non-loopback address asked for with no token and no explicit consent."""


def is_loopback(address: str) -> bool:
    """Is `address` (an IP, as getaddrinfo gives it) this machine's loopback?"""
    try:
        return ipaddress.ip_address(address.partition("%")[0]).is_loopback
    except ValueError:
        return False


def refuse_unless_protected(address: str, port: int, token: str | None, insecure: bool) -> None:
    """Raise before anything listens on a reachable address nobody guards, or
    behind a token too weak to guard it."""
    if token is not None:
        check_token(token)
    elif not insecure and not is_loopback(address):
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


def check_token(token: str) -> None:
    """Refuse a token a scraper's guesses could find, or one a header cannot carry."""
    if len(token) < 16:
        raise ValueError("the token must be at least 16 characters")
    if any(ord(char) < 0x21 or ord(char) > 0x7E for char in token):
        raise ValueError("the token must be printable ASCII without spaces")


def read_token(path: str) -> str:
    """The token in `path` (surrounding whitespace dropped). The errors never
    quote the file: a byte of it would be a byte of the secret."""
    try:
        with open(path, encoding="utf-8") as file:
            token = file.read().strip()
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    try:
        check_token(token)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    if os.stat(path).st_mode & 0o077:
        log.warning("%s can be read by other users: chmod 600 it", path)
    return token


def loopback_hosts_only(app: WSGIApplication, host: str) -> WSGIApplication:
    """`app` for requests that name this machine (or `host`) in their Host
    header; a 400 for the others: a web page that rebinds its own name to
    127.0.0.1 cannot read a loopback server nobody signs in to."""
    allowed = LOOPBACK_HOSTS | {host.strip("[]").lower()}

    def checked(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if host_name(environ.get("HTTP_HOST")) in allowed:
            return app(environ, start_response)
        body = b"unknown Host header\n"
        start_response(
            "400 Bad Request",
            [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))],
        )
        return [body]

    return checked
