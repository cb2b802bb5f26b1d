"""grant-runtime-role, revoke-runtime-role, grant-operator-role,
revoke-operator-role: the runbook's role steps (docs/ops.md, "Who may do
what"), the safe way for whoever runs them.

The hub's owner grants on its own objects. A superuser (or a managed
service's admin) runs only the DDL guard's part of a runtime-role step and
runs nothing of the hub's (provider/deploy/runtime_role.py); the output then
says what is left for the owner.
"""

from __future__ import annotations

from typing import Annotated

import typer

from provider.cli.hubs import require_hub
from provider.cli.options import AsJson, Schema, Url, database_url, print_json, say
from provider.deploy import runtime_role

Role = Annotated[str, typer.Argument(help="the role (create it first: CREATE ROLE ... LOGIN)")]


def _role(name: str) -> str:
    try:
        return runtime_role.validate_role_name(name)
    except runtime_role.InvalidRuntimeRole as error:
        raise typer.BadParameter(str(error)) from None


def _done(as_json: bool, **result: object) -> None:
    if as_json:
        print_json(result)
    else:
        say(", ".join(f"{key.replace('_', ' ')}: {value}" for key, value in result.items()))


def _owner_next(step: runtime_role.RoleStep, verb: str, as_json: bool) -> None:
    """After the guard's part alone: the owner's step, named."""
    if not step.owner_step_left() or as_json:
        return
    say(
        f"the hub's owner {step.owner} grants and records the rest, connected as itself:"
        f" taskhub-pg {verb} {step.role} --schema {step.schema}"
    )


def register(app: typer.Typer) -> None:
    @app.command("grant-runtime-role")
    def grant_runtime_role(
        role: Role,
        url: Url = None,
        schema: Schema = "public",
        runtime_ddl: Annotated[
            str,
            typer.Option(
                help="guarded: CREATE behind the DDL guard (duroxide 0.2.2 needs it; a "
                "superuser's step); none: no CREATE at all"
            ),
        ] = "guarded",
        as_json: AsJson = False,
    ) -> None:
        """Make ROLE a runtime role of the hub: exactly what a runtime needs."""
        name = _role(role)
        try:
            mode = runtime_role.validate_runtime_ddl(runtime_ddl)
        except runtime_role.InvalidRuntimeRole as error:
            raise typer.BadParameter(str(error), param_hint="--runtime-ddl") from None
        target = database_url(url)
        require_hub(target, schema, privileged_ok=True)
        step = runtime_role.grant(target, schema, name, mode)
        _done(
            as_json,
            runtime_role=name,
            runtime_ddl=mode,
            schema=schema,
            guard_changed=step.guard_changed,
            owner_step_done=step.owner_step_done,
        )
        _owner_next(step, f"grant-runtime-role --runtime-ddl {mode}", as_json)

    @app.command("revoke-runtime-role")
    def revoke_runtime_role(
        role: Role, url: Url = None, schema: Schema = "public", as_json: AsJson = False
    ) -> None:
        """Take back everything a runtime-role grant gave ROLE (before DROP ROLE)."""
        name = _role(role)
        target = database_url(url)
        require_hub(target, schema, privileged_ok=True)
        step, was = runtime_role.revoke(target, schema, name)
        _done(
            as_json,
            runtime_role=name,
            revoked=was,
            schema=schema,
            guard_changed=step.guard_changed,
            owner_step_done=step.owner_step_done,
        )
        _owner_next(step, "revoke-runtime-role", as_json)

    @app.command("grant-operator-role")
    def grant_operator_role(
        role: Role, url: Url = None, schema: Schema = "public", as_json: AsJson = False
    ) -> None:
        """Make ROLE an operator of the hub: the runbook, and nothing more."""
        name = _role(role)
        target = database_url(url)
        require_hub(target, schema, privileged_ok=True)
        runtime_role.grant_operator(target, schema, name)
        _done(as_json, operator_role=name, schema=schema)

    @app.command("revoke-operator-role")
    def revoke_operator_role(
        role: Role, url: Url = None, schema: Schema = "public", as_json: AsJson = False
    ) -> None:
        """Take back everything an operator grant gave ROLE."""
        name = _role(role)
        target = database_url(url)
        require_hub(target, schema, privileged_ok=True)
        was = runtime_role.revoke_operator(target, schema, name)
        _done(as_json, operator_role=name, revoked=was, schema=schema)
