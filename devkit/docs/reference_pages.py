"""An MkDocs hook: the reference pages written from the code, at every build.

* reference/cli.md: every command of `taskhub-pg` and every group of
  commands (with a group's own options: `taskhub-pg dashboard`), from the
  Typer app itself (its help, arguments and options), so the page cannot
  disagree with `--help`;
* reference/sql.md: every function of the current schema (sql/head/), its
  signature and the comment its file opens with;
* reference/settings.md and reference/errors.md (devkit/docs/settings_page.py,
  errors_page.py): every setting, exit code and SQLSTATE.

reference/python-api.md is committed (devkit/docs/python_api_page.py writes
it); a build where it is out of date warns, and so fails (strict).

mkdocs.yml names this file under `hooks:`.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
import typer.main
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

CHECKOUT = Path(__file__).resolve().parent.parent.parent
# MkDocs loads a hook by its path, not as part of a package: the pages it
# writes beside this one are imported from the checkout it belongs to.
if str(CHECKOUT) not in sys.path:
    sys.path.insert(0, str(CHECKOUT))

from devkit.docs.errors_page import errors_page  # noqa: E402
from devkit.docs.python_api_page import COMMAND, PAGE, python_api_page  # noqa: E402
from devkit.docs.settings_page import settings_page  # noqa: E402
from devkit.schema.releases import open_revisions  # noqa: E402
from provider.cli import app  # noqa: E402
from provider.deploy import function_history  # noqa: E402

HEAD = CHECKOUT / "sql" / "head"
# Under "mkdocs.": its warnings count in a strict build.
log = logging.getLogger("mkdocs.hooks.reference_pages")
PROG = "taskhub-pg"
_CREATE = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(?P<name>\w+)\((?P<args>.*?)\)\s*"
    r"RETURNS (?P<returns>.*?)\s*\n(?:LANGUAGE|SECURITY|SET|STABLE|VOLATILE|AS|PARALLEL)",
    flags=re.MULTILINE | re.DOTALL,
)
# Where each folder of sql/head/ stands in the page, with a line on what it holds.
AREAS = {
    "orchestration_queue": "The orchestrator queue: the runtime's fetch, ack, abandon and renew.",
    "worker_queue": "The worker queue: the activities' fetch, ack, abandon and renew.",
    "history": "History and instance reads.",
    "sessions": "Session leases.",
    "management": "Management: deletes, prunes and the client's calls.",
    "operations": "The operator's reads and actions (the runbook).",
    "schedules": "Schedules.",
    "flow_control": "Flow control: pauses, concurrency and rate limits that the fetches enforce.",
    "wakeups": "Push wakeups (LISTEN/NOTIFY): who is listening, and the notifications.",
    "transient_failures": "The shield: transient failures given back, and their record.",
    "tracing": "Trace contexts kept with an instance.",
    "privileges": "Roles: the runtime and operator grants, the runtime DDL guard.",
    "drift_check": "The drift check (`taskhub-pg check`, `repair`).",
    "adoption": "Adopting a duroxide-pg schema and giving it back.",
    "citus": "Citus.",
    "helpers": "Helpers the procedures share (not called from outside).",
}


def on_files(files: Files, config: MkDocsConfig, **_: Any) -> Files:
    pages = {
        "reference/cli.md": cli_page(),
        "reference/sql.md": sql_page(),
        "reference/settings.md": settings_page(),
        "reference/errors.md": errors_page(),
    }
    for path, content in pages.items():
        files.append(File.generated(config, path, content=content))
    if PAGE.read_text(encoding="utf-8") != python_api_page():
        log.warning("docs/reference/python-api.md is out of date: run %s", COMMAND)
    return files


# -- the command line ---------------------------------------------------------


def cli_page() -> str:
    root = typer.main.get_command(app)
    lines = [
        f"# The `{PROG}` command line",
        "",
        "Written from the command line's own definitions at every build: what",
        f"`{PROG} COMMAND --help` prints, on one page: every command and every group",
        "of commands, each with its arguments and options (a group's own options too,",
        f"as `{PROG} dashboard` has).",
        "",
    ]
    for path, command, context in commands(root, typer.Context(root, info_name=PROG)):
        lines += _command_section(path, command, context)
    return "\n".join(lines).rstrip("\n") + "\n"


def commands(command: Any, context: Any) -> Iterator[tuple[list[str], Any, Any]]:
    """`command` and every visible command under it, depth first, by name:
    groups too, since a group can take options of its own (a callback's)."""
    yield context.command_path.split(), command, context
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            yield from commands(sub, typer.Context(sub, info_name=name, parent=context))


def _command_section(path: list[str], command: Any, context: Any) -> list[str]:
    usage = " ".join([*path, *command.collect_usage_pieces(context)])
    lines = [f"## {' '.join(path[1:]) or PROG}", "", f"`{usage}`", ""]
    if getattr(command, "invoke_without_command", False):  # a group that runs itself
        lines += [f"or, to run it: `{' '.join([*path, '[OPTIONS]'])}`", ""]
    lines += [*_paragraphs(command.help or command.short_help or ""), ""]
    return (
        lines
        + _arguments(command, context)
        + _options(command, context)
        + _subcommands(path, command)
    )


def _arguments(command: Any, context: Any) -> list[str]:
    arguments = _visible(command, "argument")
    if not arguments:
        return []
    lines = ["| argument | what it is |", "|---|---|"]
    for argument in arguments:
        name = argument.metavar or argument.name  # as --help names it
        lines.append(f"| `{name}` | {_cell(_help_of(argument, context))} |")
    return [*lines, ""]


def _options(command: Any, context: Any) -> list[str]:
    """Each option under all its names (`--yes`, `-y`; `--allow-actions`,
    `--no-allow-actions`), its help as --help prints it: with the
    environment variable, the default and the range it adds."""
    options = _visible(command, "option")
    if not options:
        return []
    lines = ["| option | what it does |", "|---|---|"]
    for option in options:
        names = ", ".join(f"`{name}`" for name in [*option.opts, *option.secondary_opts])
        lines.append(f"| {names} | {_cell(_help_of(option, context))} |")
    return [*lines, ""]


def _visible(command: Any, kind: str) -> list[Any]:
    return [p for p in command.params if p.param_type_name == kind and not p.hidden]


def _help_of(parameter: Any, context: Any) -> str:
    record = parameter.get_help_record(context)
    return record[1] if record else ""


def _subcommands(path: list[str], command: Any) -> list[str]:
    """A group's commands, each linked to its section."""
    visible = sorted(
        (name, sub) for name, sub in getattr(command, "commands", {}).items() if not sub.hidden
    )
    if not visible:
        return []
    lines = ["Commands:", ""]
    for name, sub in visible:
        anchor = "-".join([*path[1:], name])  # the heading's slug (mkdocs.yml's toc)
        lines.append(f"- [`{name}`](#{anchor}): {_paragraph(sub.get_short_help_str(limit=200))}")
    return [*lines, ""]


def _paragraphs(text: str) -> list[str]:
    """A help text's paragraphs, each on one line, a blank line between."""
    found = [_paragraph(part) for part in re.split(r"\n\s*\n", text) if part.strip()]
    return "\n\n".join(found).split("\n") if found else []


def _paragraph(text: str) -> str:
    return " ".join(text.split())


def _cell(text: str) -> str:
    return _paragraph(text).replace("|", "\\|")


# -- the SQL functions ----------------------------------------------------------


def sql_page() -> str:
    lines = [
        "# SQL functions",
        "",
        "Every function of the current schema, written from `sql/head/` at every",
        "build: its signature in the hub's schema and the comment its file opens",
        "with. Who may call which is in [Security and roles](../security.md) and",
        "[The runbook](../ops.md).",
        "",
    ]
    unplaced = [
        folder.name
        for folder in sorted(HEAD.iterdir())
        if folder.name not in AREAS
        and any(_CREATE.search(path.read_text()) for path in folder.glob("*.sql"))
    ]
    if unplaced:  # a new folder of functions: give it its place and its line
        raise ValueError(f"sql/head/ folders of functions not in AREAS: {unplaced}")
    for area, what in AREAS.items():
        folder = HEAD / area
        functions = sorted(folder.glob("*.sql")) if folder.is_dir() else []
        if not functions:
            continue
        lines += [f"## {area}", "", what, ""]
        for path in functions:
            lines += _function_section(path)
    return "\n".join(lines) + "\n"


def _function_section(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    found = _CREATE.search(text)
    name = found.group("name") if found else path.stem
    lines = [f"### {name}", ""]
    if found:
        arguments = _paragraph(found.group("args"))
        returns = _paragraph(found.group("returns"))
        lines += ["```sql", f"{name}({arguments})", f"RETURNS {returns}", "```", ""]
    comment = _opening_comment(text)
    if comment:
        lines += [comment, ""]
    shipped = [v.revision for v in function_history.versions(name) if not v.dropped]
    if shipped:
        lines += [
            f"Versions (`sql/functions/{name}/`): revisions {', '.join(shipped)}"
            + (" (the newest not released yet)" if shipped[-1] in open_numbers() else "")
            + ".",
            "",
        ]
    return lines


def open_numbers() -> set[str]:
    """The numbers of the revisions not released yet."""
    return {name[:4] for name in open_revisions()}


def _opening_comment(text: str) -> str:
    """The `--` lines the file opens with, as written (a text block: they
    hold SQL names and hand-made lists that Markdown would reflow)."""
    kept: list[str] = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        kept.append(line[3:] if line.startswith("-- ") else line[2:])
    return "```text\n" + "\n".join(kept).strip("\n") + "\n```" if kept else ""
