"""Who may use the dashboard, from where, under which Host: the policy the
command line builds, and the rules that read a request's headers against it.
Standard library only: the CLI checks its options with it before it loads
the web extra.

Three ways in:
- HTTP basic auth against the accounts of a users file or of the variable
  TASKHUB_DASHBOARD_USERS (passwords.py);
- an authenticating proxy that names the user in a header, believed only
  when the request comes from one of `forwarded_allow` (--forwarded-allow-ips);
- no authentication at all (`open`): the default on a loopback address, or
  --insecure-no-auth; everyone is "anonymous" and may act.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from provider.dashboard.passwords import Account
from provider.host_headers import LOOPBACK_HOSTS, host_name

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_PROXY_USER = 128


@dataclass(frozen=True)
class Identity:
    name: str  # for the audit log and the page's header
    may_act: bool  # an operator: may take the actions (when they are on)
    via: str  # "basic", "proxy" or "none"


ANONYMOUS = Identity("anonymous", True, "none")


@dataclass(frozen=True)
class AccessPolicy:
    accounts: Mapping[str, Account] = field(default_factory=dict)
    proxy_header: str | None = None  # set by an authenticating proxy, e.g. X-Forwarded-User
    proxy_operators: frozenset[str] = frozenset()  # the proxy's users who may act
    forwarded_allow: tuple[Network, ...] = ()  # peers whose forwarded headers are believed
    allowed_hosts: frozenset[str] = LOOPBACK_HOSTS

    @property
    def open(self) -> bool:
        """No authentication configured: every request is ANONYMOUS."""
        return not self.accounts and self.proxy_header is None

    def trusts(self, peer: str | None) -> bool:
        """Whether `peer` (the TCP peer's address) is a configured proxy."""
        address = _address(peer)
        return address is not None and any(address in net for net in self.forwarded_allow)

    def host_allowed(self, host_header: str | None) -> bool:
        name = host_name(host_header)
        return name is not None and name in self.allowed_hosts

    def proxy_identity(self, value: str | None) -> Identity | None:
        """The user the proxy's header names; None when it names nobody readable."""
        if value is None:
            return None
        name = value.strip()
        if not name or len(name) > MAX_PROXY_USER or not name.isprintable():
            return None
        return Identity(name, name in self.proxy_operators, "proxy")


def networks(values: Iterable[str]) -> tuple[Network, ...]:
    """--forwarded-allow-ips: addresses or networks, comma-separated or
    repeated; ValueError naming the one that is neither."""
    found = []
    for value in values:
        for item in value.split(","):
            if not item.strip():
                continue
            try:
                found.append(ipaddress.ip_network(item.strip(), strict=False))
            except ValueError:
                raise ValueError(f"{item.strip()!r} is no IP address or network") from None
    return tuple(found)


def is_loopback(host: str) -> bool:
    """Whether listening on `host` serves this machine only."""
    if host.lower() == "localhost":
        return True
    address = _address(host.strip("[]"))
    return address is not None and address.is_loopback


def basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    """(user, password) of an `Authorization: Basic ...` header; None for
    any other header or one that does not decode."""
    if not authorization:
        return None
    scheme, _, encoded = authorization.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, colon, password = decoded.partition(":")
    return (user, password) if colon and user else None


def client_address(policy: AccessPolicy, peer: str | None, forwarded_for: str | None) -> str:
    """Who sent the request, for the log: the TCP peer, unless it is a
    configured proxy; then the last address in X-Forwarded-For that is not
    one of the proxies (an earlier one may be made up by the client)."""
    shown = peer or "?"
    hop = _forwarded_client(policy, peer, forwarded_for)
    if hop == "":
        return f"{shown} (forwarding an unreadable address)"
    return shown if hop is None else f"{hop} (via {shown})"


def client_network(policy: AccessPolicy, peer: str | None, forwarded_for: str | None) -> str:
    """The client a sign-in limit counts: the address client_address names
    (the peer when a proxy forwards an unreadable one), an IPv6 address by
    its /64, which one machine is commonly given whole."""
    text = _forwarded_client(policy, peer, forwarded_for) or peer or "?"
    address = _address(text)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address) if address is not None else text[:100]


def _forwarded_client(
    policy: AccessPolicy, peer: str | None, forwarded_for: str | None
) -> str | None:
    """The last address of X-Forwarded-For that is not a proxy, when a proxy
    sent it; "" when that hop is unreadable; None when none is believed."""
    if not forwarded_for or not policy.trusts(peer):
        return None
    for hop in reversed([part.strip() for part in forwarded_for.split(",")]):
        if _address(hop) is None:
            return ""
        if not policy.trusts(hop):
            return hop
    return None


def _address(text: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text) if text else None
    except ValueError:
        return None
