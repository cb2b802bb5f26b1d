"""An address of this machine that is not loopback, for the tests of what a
server listens on: one of the machine's interfaces, or, when it has none (a
container with loopback only), one made for the test: a veth pair whose
other end is in a network namespace of its own (`ip netns`, as root),
removed afterwards."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def _usable(address: str) -> bool:
    try:
        found = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (found.is_loopback or found.is_link_local or found.is_unspecified)


def interface_address() -> str | None:
    """A non-loopback IPv4 address one of this machine's interfaces holds."""
    if shutil.which("ip"):
        listed = subprocess.run(
            ["ip", "-j", "-4", "addr", "show", "up"], capture_output=True, text=True
        )
        if listed.returncode == 0:
            for interface in json.loads(listed.stdout or "[]"):
                for entry in interface.get("addr_info", []):
                    if _usable(str(entry.get("local", ""))):
                        return str(entry["local"])
    # Without iproute2: the address a datagram to a documentation address
    # would leave from (connect() on UDP sends nothing).
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return address if _usable(address) else None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@contextmanager
def veth_address() -> Iterator[str]:
    """A veth pair made for the test: this end holds 10.231.N.1 (N from the
    process id, so that parallel test processes do not collide), the other
    end sits in a namespace of its own; both removed afterwards."""
    tag = os.getpid() % 250
    namespace, here, there = f"taskhub-t{os.getpid()}", f"thv{os.getpid()}a", f"thv{os.getpid()}b"
    address = f"10.231.{tag}.1"
    _ip("netns", "add", namespace)
    try:
        _ip("link", "add", here, "type", "veth", "peer", "name", there)
        try:
            _ip("link", "set", there, "netns", namespace)
            _ip("addr", "add", f"{address}/30", "dev", here)
            _ip("link", "set", here, "up")
            _ip("-n", namespace, "addr", "add", f"10.231.{tag}.2/30", "dev", there)
            _ip("-n", namespace, "link", "set", there, "up")
            yield address
        finally:
            _ip("link", "del", here)  # takes its peer with it
    finally:
        _ip("netns", "del", namespace)


@contextmanager
def non_loopback_address() -> Iterator[str]:
    """A non-loopback address of this machine, made for the test if need be;
    the test is skipped only when none can exist (no interface but loopback,
    and no root or no `ip` to make one)."""
    found = interface_address()
    if found is not None:
        yield found
        return
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip(
            "this machine has loopback only, and a veth pair needs root and iproute2:"
            " no non-loopback address can exist here"
        )
    with veth_address() as address:
        yield address
