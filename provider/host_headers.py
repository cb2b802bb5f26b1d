"""What a request's Host header names, for the servers that answer only the
names they expect (the dashboard, a loopback metrics server): a web page
that rebinds its own name to 127.0.0.1 still sends its own name."""

from __future__ import annotations

# The names a browser on this machine uses: a Host allowlist's default.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def host_name(host_header: str | None) -> str | None:
    """The name a Host header asks for, without its port: lower case, an IPv6
    address without brackets; None when it is missing or unreadable."""
    if not host_header:
        return None
    value = host_header.strip().lower()
    if value.startswith("["):
        name, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not _is_port(rest)):
            return None
        return name
    name, colon, port = value.rpartition(":")
    if not colon:
        name = value
    elif not _is_port(":" + port):
        return None
    name = name.rstrip(".")
    readable = name.isascii() and all(ch.isalnum() or ch in "-._" for ch in name)
    return name if name and readable else None


def _is_port(text: str) -> bool:
    return text.startswith(":") and text[1:].isascii() and text[1:].isdigit() and len(text) <= 6
