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

from provider.client.hub_status import read_hub_status
from provider.deploy import migrate
from provider.deploy.runtime_role import RUNTIME_DDL_MODES, InvalidRuntimeRole, validate_role_name
from provider.schema_name import InvalidSchemaName, validate_schema_name


def status(url: str, schema: str) -> int:
    found = read_hub_status(url, schema)
    head = migrate.head_revision()
    print(f"schema:   {schema}")
    print(f"current:  {found.revision or 'not migrated'}")
    print(f"head:     {head}")
    print("pending:  " + ("none" if found.revision == head else f"upgrade to {head}"))
    if found.queues:
        print("queues:")
    for q in found.queues:
        print(
            f"  {q.queue:<13} ready {q.ready}, scheduled {q.scheduled}, leased {q.leased},"
            f" max attempts {q.max_attempt_count}, dead letters {q.dead_letters}"
        )
    if found.runtime_roles is not None:
        described = ", ".join(f"{name} (runtime_ddl {mode})" for name, mode in found.runtime_roles)
        print(f"runtime roles: {described or 'none'}")
    if (shielded := found.shielded_failures) is not None:
        print(
            f"transient failures given back: {shielded.last_day} in the last day,"
            f" {shielded.total} in all (transient_failure_policy {shielded.policy})"
        )
    return 0


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
