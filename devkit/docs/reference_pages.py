"""An MkDocs hook: the reference pages written from the code, at every build.

* reference/cli.md: every verb of `taskhub-pg`, from the Typer app itself
  (its help, arguments and options), so the page cannot disagree with
  `--help`;
* reference/sql.md: every function of the current schema (sql/head/), its
  signature and the comment its file opens with;
* reference/settings.md and reference/errors.md (devkit/docs/settings_page.py,
  errors_page.py): every setting, exit code and SQLSTATE.

mkdocs.yml names this file under `hooks:`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import typer.main
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

CHECKOUT = Path(__file__).resolve().parent.parent.parent
# MkDocs loads a hook by its path, not as part of a package: the pages it
# writes beside this one are imported from the checkout it belongs to.
if str(CHECKOUT) not in sys.path:
    sys.path.insert(0, str(CHECKOUT))

from devkit.docs.errors_page import errors_page  # noqa: E402
from devkit.docs.settings_page import settings_page  # noqa: E402
from devkit.schema.releases import open_revisions  # noqa: E402
from provider.cli import app  # noqa: E402
from provider.deploy import function_history  # noqa: E402

HEAD = CHECKOUT / "sql" / "head"
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
    return files


# -- the command line ---------------------------------------------------------


def cli_page() -> str:
    root = typer.main.get_command(app)
    lines = [
        f"# The `{PROG}` command line",
        "",
        "Written from the command line's own definitions at every build: what",
        f"`{PROG} VERB --help` prints, on one page.",
        "",
        _paragraph(root.help or ""),
        "",
    ]
    for path, command in _verbs(root, [PROG]):
        lines += _verb_section(path, command)
    return "\n".join(lines) + "\n"


def _verbs(command: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    """Each visible verb under `command`, depth first, by name."""
    found = []
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if sub.hidden:
            continue
        if getattr(sub, "commands", None):
            found += _verbs(sub, [*path, name])
        else:
            found.append(([*path, name], sub))
    return found


def _verb_section(path: list[str], command: Any) -> list[str]:
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    usage = " ".join([*path, *(a.name.upper() for a in arguments), "[OPTIONS]"])
    lines = [f"## {' '.join(path[1:])}", "", f"`{usage}`", ""]
    if command.help:
        lines += [_paragraph(command.help), ""]
    options = [p for p in command.params if p.param_type_name == "option" and not p.hidden]
    if options:
        lines += ["| option | what it does | default |", "|---|---|---|"]
        for option in options:
            names = ", ".join(f"`{name}`" for name in option.opts)
            lines.append(f"| {names} | {_cell(option.help or '')} | {_default(option)} |")
        lines.append("")
    return lines


def _default(option: Any) -> str:
    if option.is_flag or option.default in (None, (), [], "", False):
        return ""
    return f"`{option.default}`"


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
