"""Command line of taskhub-pg, usable from a virtualenv that installed the wheel.

    python -m provider upgrade --url URL --schema NAME [--revision head]
                               [--runtime-role ROLE [--runtime-ddl guarded|none]]
    python -m provider downgrade --url URL --schema NAME --revision REV
    python -m provider sql --schema NAME [--runtime-role ROLE]   # the offline script, for psql
    python -m provider status --url URL --schema NAME

The URL defaults to DATABASE_URL.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import psycopg
from psycopg import sql

from provider.deploy import migrate
from provider.deploy.runtime_role import RUNTIME_DDL_MODES, InvalidRuntimeRole, validate_role_name
from provider.schema_name import InvalidSchemaName, validate_schema_name

VERSION_TABLE = "taskhub_pg_alembic_version"


def status(url: str, schema: str) -> int:
    head = migrate.head_revision()
    with psycopg.connect(url, autocommit=True) as conn:
        table = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".{VERSION_TABLE}']).fetchone()
        current = None
        if table and table[0]:
            row = conn.execute(
                sql.SQL("SELECT version_num FROM {}.{}").format(
                    sql.Identifier(schema), sql.Identifier(VERSION_TABLE)
                )
            ).fetchone()
            current = row[0] if row else None
        print(f"schema:   {schema}")
        print(f"current:  {current or 'not migrated'}")
        print(f"head:     {head}")
        print("pending:  " + ("none" if current == head else f"upgrade to {head}"))
        health = conn.execute(
            "SELECT to_regclass(%s)", [f'"{schema}".taskhub_queue_health']
        ).fetchone()
        if health and health[0]:
            print("queues:")
            rows = conn.execute(
                sql.SQL(
                    "SELECT queue, ready, scheduled, leased, max_attempt_count, dead_letters"
                    " FROM {}.taskhub_queue_health"
                ).format(sql.Identifier(schema))
            ).fetchall()
            for queue, ready, scheduled, leased, attempts, dead in rows:
                print(
                    f"  {queue:<13} ready {ready}, scheduled {scheduled}, leased {leased},"
                    f" max attempts {attempts}, dead letters {dead}"
                )
        roles_table = conn.execute(
            "SELECT to_regclass(%s)", [f'"{schema}".taskhub_runtime_roles']
        ).fetchone()
        if roles_table and roles_table[0]:
            roles = conn.execute(
                sql.SQL(
                    "SELECT role_name, runtime_ddl FROM {}.taskhub_runtime_roles ORDER BY 1"
                ).format(sql.Identifier(schema))
            ).fetchall()
            described = ", ".join(f"{name} (runtime_ddl {mode})" for name, mode in roles)
            print(f"runtime roles: {described or 'none'}")
        _print_shielded_failures(conn, schema)
    return 0


def _print_shielded_failures(conn: psycopg.Connection[Any], schema: str) -> None:
    """Transient failures given back instead of failing orchestrations (0007)."""
    table = conn.execute("SELECT to_regclass(%s)", [f'"{schema}".shielded_failures']).fetchone()
    if not (table and table[0]):
        return
    row = conn.execute(
        sql.SQL(
            "SELECT (SELECT value FROM {0}.taskhub_settings"
            "         WHERE name = 'transient_failure_policy'),"
            "       count(*) FILTER (WHERE shielded_at > now() - interval '1 day'),"
            "       count(*)"
            "  FROM {0}.shielded_failures"
        ).format(sql.Identifier(schema))
    ).fetchone()
    assert row is not None
    policy, last_day, total = row
    print(
        f"transient failures given back: {last_day} in the last day, {total} in all"
        f" (transient_failure_policy {policy or 'retry'})"
    )


def _add_runtime_role_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--runtime-role",
        help="grant this role exactly what the runtime needs (see docs/ops.md)",
    )
    command.add_argument(
        "--runtime-ddl",
        choices=RUNTIME_DDL_MODES,
        default="guarded",
        help="guarded: CREATE for the duroxide runtime's connect, real DDL refused;"
        " none: no CREATE (enough for the taskhub provider)",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m provider", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("upgrade", "downgrade", "status"):
        command = commands.add_parser(name)
        command.add_argument("--url", default=os.environ.get("DATABASE_URL"))
        command.add_argument("--schema", default="public")
        if name != "status":
            command.add_argument(
                "--revision",
                default="head" if name == "upgrade" else None,
                required=name == "downgrade",
            )
        if name == "upgrade":
            _add_runtime_role_arguments(command)
    offline = commands.add_parser("sql")
    offline.add_argument("--schema", default="public")
    offline.add_argument("--revision", default="head")
    _add_runtime_role_arguments(offline)
    args = parser.parse_args(argv)

    try:
        validate_schema_name(args.schema)
        if getattr(args, "runtime_role", None):
            validate_role_name(args.runtime_role)
    except (InvalidSchemaName, InvalidRuntimeRole) as error:
        parser.error(str(error))
    if args.command == "sql":
        migrate.offline_script(
            args.schema,
            args.revision,
            runtime_role=args.runtime_role,
            runtime_ddl=args.runtime_ddl,
        )
        return 0
    if not args.url:
        parser.error("--url is required (or set DATABASE_URL)")
    url = args.url.replace("postgresql+psycopg://", "postgresql://")
    if args.command == "upgrade":
        migrate.upgrade(
            url,
            args.schema,
            args.revision,
            runtime_role=args.runtime_role,
            runtime_ddl=args.runtime_ddl,
        )
    elif args.command == "downgrade":
        migrate.downgrade(url, args.schema, args.revision)
    else:
        return status(url, args.schema)
    return 0


if __name__ == "__main__":
    sys.exit(main())
