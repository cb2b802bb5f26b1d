"""The reference pages leave nothing out: every name of `provider.__all__`,
each class's public methods (with signature and docstring) and each
record's fields are on docs/reference/python-api.md, which is up to date;
every command and group of `taskhub-pg`, with each of its arguments and
options (a group's own too), is on reference/cli.md. No database.

The walks here are the tests' own, not the generators': a generator that
skips a kind of name or command fails them."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Iterator
from typing import Any

import typer
import typer.main

import provider
from devkit.docs import python_api_page, reference_pages
from provider.cli import app

PROG = "taskhub-pg"


def sections(page: str, marks: str) -> dict[str, str]:
    """Each heading that starts with `marks` ("## "), with the text under it
    up to the next heading."""
    found: dict[str, str] = {}
    parts = re.split(r"^(#+ .*)$", page, flags=re.MULTILINE)
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        if heading.startswith(marks) and not heading.startswith(marks + "#"):
            found[heading.removeprefix(marks).strip()] = body
    return found


# -- the Python API ------------------------------------------------------------


def public_members(cls: type) -> Iterator[tuple[str, Any]]:
    """Each public method and property a user can reach on `cls` that the
    package defines (not object's, Exception's or logging's), with the
    function that holds its docstring."""
    for member in dir(cls):
        if member.startswith("_"):
            continue
        owner = next(c for c in cls.__mro__ if member in vars(c))
        raw = vars(owner)[member]
        if not owner.__module__.startswith("provider"):
            continue
        if isinstance(raw, property):
            yield member, raw.fget
        elif isinstance(raw, staticmethod | classmethod):
            yield member, raw.__func__
        elif inspect.isfunction(raw):
            yield member, raw


def missing_from_api_page(page: str) -> list[str]:
    """What the page leaves out: a public name without its section, a
    method or property without its own (under its class or a public base
    of it), without its signature or its docstring, a record's field."""
    names = sections(page, "### ")
    members = sections(page, "#### ")
    missing = [name for name in provider.__all__ if name not in names]
    for name in provider.__all__:
        cls = getattr(provider, name)
        if not inspect.isclass(cls):
            continue
        for member, function in public_members(cls):
            problem = _member_problem(members, cls, member, function)
            if problem is not None:
                missing.append(f"{name}.{member}{problem}")
        if dataclasses.is_dataclass(cls) and name in names:
            for field in dataclasses.fields(cls):
                if f"- `{field.name}: " not in names[name]:
                    missing.append(f"{name}.{field.name} (a field)")
    return missing


def _member_problem(members: dict[str, str], cls: type, member: str, function: Any) -> str | None:
    """What the member's section lacks ("": the section itself), or None. Its
    section is under `cls` or under the public base that defines it
    (TaskHubError.renamed serves every error)."""
    public = [c.__name__ for c in cls.__mro__ if c.__name__ in provider.__all__]
    body = next((members[f"{c}.{member}"] for c in public if f"{c}.{member}" in members), None)
    if body is None:
        return ""
    if not re.search(rf"^`(?:\w+ )*{member}[(:]?", body, re.MULTILINE):
        return " (its signature)"
    if function.__doc__ and _first_line(function.__doc__) not in body:
        return " (its docstring)"
    return None


def _first_line(docstring: str) -> str:
    return inspect.cleandoc(docstring).splitlines()[0].replace("<", "&lt;")


def test_every_public_name_and_method_is_on_the_python_api_page() -> None:
    assert missing_from_api_page(python_api_page.python_api_page()) == []


def test_the_committed_python_api_page_is_up_to_date() -> None:
    committed = python_api_page.PAGE.read_text(encoding="utf-8")
    assert committed == python_api_page.python_api_page(), (
        f"docs/reference/python-api.md is out of date: run {python_api_page.COMMAND}"
    )


def test_the_methods_the_first_reader_missed_are_there() -> None:
    """Issue 58: Client.find, cancel and set_schedule, Scheduler and
    StartRequest were not on the page (methods made by plans.blocking are
    attributes to a static reader)."""
    page = python_api_page.python_api_page()
    members = sections(page, "#### ")
    assert {"Scheduler", "StartRequest"} <= set(sections(page, "### "))
    for method in ("find", "cancel", "set_schedule"):
        assert f"Client.{method}" in members and f"AsyncClient.{method}" in members
    # A wrapper of a plan shows what the call returns, not the plan.
    assert "-> list[InstanceSummary]`" in members["Client.find"]
    assert members["AsyncClient.find"].lstrip().startswith("`async find(")


def test_a_public_name_the_page_leaves_out_is_found() -> None:
    page = python_api_page.python_api_page()
    without = page.replace("### Scheduler\n", "### Scheduled\n").replace(
        "#### Client.find\n", "#### Client.found\n"
    )
    assert {"Scheduler", "Client.find"} <= set(missing_from_api_page(without))


# -- the command line --------------------------------------------------------------


def walk(command: Any, path: list[str]) -> Iterator[tuple[list[str], Any]]:
    """Every visible command and group under the root, the root included."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        if not sub.hidden:
            yield from walk(sub, [*path, name])


def missing_from_cli_page(page: str) -> list[str]:
    """Each command path without its section, and each argument or option
    name (`--no-...` forms and short names too) not in its command's section."""
    found = sections(page, "## ")
    missing = []
    for path, command in walk(typer.main.get_command(app), [PROG]):
        heading = " ".join(path[1:]) or PROG
        body = found.get(heading)
        if body is None:
            missing.append(" ".join(path))
            continue
        for parameter in command.params:
            if parameter.hidden:
                continue
            if parameter.param_type_name == "argument":
                names = [parameter.metavar or parameter.name]
            else:
                names = [*parameter.opts, *parameter.secondary_opts]
            missing += [f"{' '.join(path)} {name}" for name in names if f"`{name}`" not in body]
    return missing


def test_every_command_group_argument_and_option_is_on_the_cli_page() -> None:
    assert missing_from_cli_page(reference_pages.cli_page()) == []


def test_the_dashboard_and_its_own_options_are_on_the_cli_page() -> None:
    """Issue 58: the page had `dashboard hash-password` but not the group
    `dashboard` itself, whose callback takes the server's options."""
    dashboard = sections(reference_pages.cli_page(), "## ")["dashboard"]
    for option in ("--users-file", "--allow-actions", "--insecure-no-auth", "--port"):
        assert f"`{option}`" in dashboard
    assert "`taskhub-pg dashboard [OPTIONS]`" in dashboard
    assert "[`hash-password`](#dashboard-hash-password)" in dashboard


def test_a_command_or_option_the_page_leaves_out_is_found() -> None:
    page = reference_pages.cli_page()
    without = page.replace("## dashboard\n", "## dashboards\n").replace(
        "| `--runtime-role` |", "| `--role-of-the-runtime` |"
    )
    missing = missing_from_cli_page(without)
    assert f"{PROG} dashboard" in missing
    assert f"{PROG} upgrade --runtime-role" in missing


def test_the_walk_reaches_groups_nested_commands_and_the_root() -> None:
    paths = [" ".join(path) for path, _ in walk(typer.main.get_command(app), [PROG])]
    assert {PROG, f"{PROG} dashboard", f"{PROG} dashboard hash-password"} <= set(paths)
    assert f"{PROG} inspect instances" in paths
    assert f"{PROG} history-format" not in paths  # a hidden alias of turn-form
