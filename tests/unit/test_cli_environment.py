"""Every option that names a hub or an address reads an environment
variable, as --url reads DATABASE_URL (issue 58): a deployment sets them
once, for every verb."""

from __future__ import annotations

from typing import Any

import typer

from provider.cli.app import app

NAMED = {"--url", "--schema", "--host", "--port"}


def commands(command: Any, path: str = "taskhub-pg") -> list[tuple[str, Any]]:
    """Each command and group of the command line, by its words."""
    found = [(path, command)]
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            found += commands(sub, f"{path} {name}")
    return found


def test_every_option_naming_a_hub_or_an_address_reads_the_environment() -> None:
    missing = []
    for path, command in commands(typer.main.get_command(app)):
        for param in command.params:
            options = (
                set(getattr(param, "opts", ())) if param.param_type_name == "option" else set()
            )
            if NAMED & options and not param.envvar:
                missing.append(f"{path} {param.opts[0]}")
    assert missing == []


def test_the_schema_comes_from_taskhub_schema() -> None:
    every = commands(typer.main.get_command(app))
    status = next(command for path, command in every if path == "taskhub-pg status")
    schema = next(p for p in status.params if "--schema" in getattr(p, "opts", ()))
    assert schema.envvar == "TASKHUB_SCHEMA"
