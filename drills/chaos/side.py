"""One side of a chaos run: a schema of one flavour and the login role its
runtime workers use.

The workers log in as a role of their own, so the faults can single out the
runtime: its backends are the ones terminated (never the harness's), and its
`statement_timeout` (ALTER ROLE ... SET, which every new connection picks up)
applies to its statements only, not to the harness's lock windows and checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg

from devkit.roles import LoginRole, login_role
from devkit.workloads.flavours import TASKHUB, Flavour
from drills.harness import with_application_name
from provider.deploy import migrate

RUNTIME_APPLICATION = "chaos-runtime"
HARNESS_APPLICATION = "chaos-harness"


@dataclass(frozen=True)
class Side:
    flavour: Flavour
    schema: str
    role: LoginRole
    admin_url: str

    @property
    def runtime_url(self) -> str:
        return with_application_name(self.role.url, RUNTIME_APPLICATION)

    @property
    def harness_url(self) -> str:
        return with_application_name(self.admin_url, HARNESS_APPLICATION)


@contextmanager
def prepared_side(admin_url: str, flavour: Flavour, statement_timeout_ms: int) -> Iterator[Side]:
    """A fresh schema of `flavour` and a runtime role that may use it; the role
    is dropped afterwards (the schema stays, for inspection)."""
    schema = f"chaos_{flavour.prefix}_{uuid.uuid4().hex[:10]}"
    with login_role(admin_url, prefix="chaos") as role:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f"ALTER ROLE {role.name} SET statement_timeout = {statement_timeout_ms}")
        build_schema(admin_url, flavour, schema, role.name)
        yield Side(flavour, schema, role, admin_url)


def build_schema(admin_url: str, flavour: Flavour, schema: str, role: str) -> None:
    if flavour is TASKHUB:
        # The product's own least-privilege deployment of a runtime role.
        migrate.upgrade(admin_url, schema, runtime_role=role)
        return
    flavour.create_schema(admin_url, schema)
    # duroxide 0.2.2 has no notion of a runtime role: its procedures run with
    # the caller's rights, so the role needs the tables themselves (and CREATE,
    # for the runtime's CREATE TABLE IF NOT EXISTS on connect).
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'GRANT USAGE, CREATE ON SCHEMA "{schema}" TO {role}')
        conn.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {role}'
        )
        conn.execute(f'GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {role}')
