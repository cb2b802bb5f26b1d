"""Test schemas cloned from one that Alembic migrated once per session.

Migrating a schema costs about 350 ms here (the session's cluster on a
tmpfs), most of it the server creating every revision's functions in turn,
and nearly every test needs a fresh one. So each kind of schema a test asks
for (plain or granted to the runtime role, at head or at an earlier
revision) is migrated once per session under a template name. A test's
schema is a replay of that template's `pg_dump`, with the template name
replaced: about 57 ms for the same schema, rows included (alembic_version,
settings); then it records its definitions, as a migration run does last.
`tests/deploy/test_schema_templates.py` checks that a clone and a migrated
schema have the same catalogue.

A database cloned with CREATE DATABASE ... TEMPLATE costs about 500 ms here,
more than a migration, so the template is a schema. Where pg_dump cannot dump
the server (missing, or older than a DATABASE_URL server), every schema is
migrated instead.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from dataclasses import dataclass, field

import psycopg

from provider.deploy import migrate
from provider.schema_name import quote_schema
from provider.testing.embedded_pg import client_tool

# (revision, runtime_role, runtime_ddl) given to the migration: one kind of schema
TemplateKind = tuple[str, str | None, str]


def _pg_dump() -> str | None:
    tool = client_tool("pg_dump")
    return tool if shutil.which(tool) else None


def _dump_schema(database_url: str, schema: str) -> str | None:
    """The schema as a script psycopg can run, or None when pg_dump cannot make one."""
    pg_dump = _pg_dump()
    if pg_dump is None:
        return None
    done = subprocess.run(
        [pg_dump, "--schema", schema, "--no-owner", "--inserts", database_url],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return None
    # psql meta-commands (\restrict, \unrestrict) are for psql only.
    return "\n".join(line for line in done.stdout.splitlines() if not line.startswith("\\"))


def _record_definitions(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> None:
    """What a migration run does last, where the revision has it: record the
    schema's definitions, which the dump holds as the template's (digests of
    bodies that name the template), so that `taskhub-pg check` finds a clone
    as it finds a migrated schema."""
    recorder = f"{quote_schema(schema)}.taskhub_record_definitions()"
    found = conn.execute("SELECT to_regprocedure(%s)", [recorder]).fetchone()
    if found and found[0] is not None:
        conn.execute(f"SELECT {recorder}")


@dataclass
class SchemaTemplates:
    """One migrated template per kind of schema, cloned on demand."""

    database_url: str
    # (template name, its dump or None when it cannot be dumped) per kind of schema
    _templates: dict[TemplateKind, tuple[str, str | None]] = field(default_factory=dict)
    # Each instance names its own templates: another instance's template0 may
    # be of another kind (granted to a runtime role, say).
    _instance: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def create(
        self,
        schema: str,
        runtime_role: str | None = None,
        runtime_ddl: str = "guarded",
        *,
        revision: str = "head",
    ) -> str:
        """`schema` as `migrate.upgrade(url, schema, revision, runtime_role=...,
        runtime_ddl=...)` leaves it. Not for runtime_ddl=guarded with a role: its
        event trigger belongs to the database, and a schema's dump does not hold it."""
        if runtime_role is not None and runtime_ddl == "guarded":
            raise ValueError("the DDL guard is a database object: migrate such a schema")
        kind: TemplateKind = (revision, runtime_role, runtime_ddl)
        if kind not in self._templates:
            self._templates[kind] = self._migrate_template(kind)
        name, script = self._templates[kind]
        if script is None:
            self._migrate(schema, kind)
            return schema
        with psycopg.connect(self.database_url, autocommit=True) as conn, conn.transaction():
            conn.execute(script.replace(name, schema).encode())
            _record_definitions(conn, schema)
        return schema

    def dumps_schemas(self) -> bool:
        """Whether every template so far is cloned (False: pg_dump failed, so they are migrated)."""
        return all(script is not None for _, script in self._templates.values())

    def _migrate_template(self, kind: TemplateKind) -> tuple[str, str | None]:
        name = f"template{len(self._templates)}_{self._instance}_{_SESSION}"
        self._migrate(name, kind)
        return name, _dump_schema(self.database_url, name)

    def _migrate(self, schema: str, kind: TemplateKind) -> None:
        revision, runtime_role, runtime_ddl = kind
        migrate.upgrade(
            self.database_url,
            schema,
            revision,
            runtime_role=runtime_role,
            runtime_ddl=runtime_ddl,
        )


# Unique to this session: a template's name never appears in anything but the dump.
_SESSION = uuid.uuid4().hex[:12]
