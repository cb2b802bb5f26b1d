"""Login roles for least-privilege tests: created fresh, dropped afterwards.

Roles belong to the whole server, not to the test database, so every role
gets a unique name and is dropped with everything granted to it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg


@dataclass(frozen=True)
class LoginRole:
    name: str
    password: str
    url: str  # the test database's URL, logging in as this role

    def url_on(self, database_url: str) -> str:
        """This role's login URL for another database of the same server."""
        return url_as(database_url, self.name, self.password)


def url_as(url: str, user: str, password: str) -> str:
    """The same URL, logging in as another user (duroxide needs URL syntax)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{quote(user)}:{quote(password)}@{host}"))


@contextmanager
def login_role(admin_url: str, prefix: str = "runtime") -> Iterator[LoginRole]:
    name = f"{prefix}_{secrets.token_hex(6)}"
    password = secrets.token_hex(16)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{password}'")
    try:
        yield LoginRole(name, password, url_as(admin_url, name, password))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [name]
            )
            # DROP OWNED also takes back what was granted to the role in this
            # database and on the database itself.
            conn.execute(f"DROP OWNED BY {name}")
            conn.execute(f"DROP ROLE {name}")


@contextmanager
def operator_of(admin_url: str, schema: str) -> Iterator[LoginRole]:
    """A login role made an operator of the hub in `schema` the way the
    runbook says (taskhub_grant_operator_role)."""
    with login_role(admin_url, prefix="operator") as role:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'SELECT "{schema}".taskhub_grant_operator_role(%s)', [role.name])
        yield role
