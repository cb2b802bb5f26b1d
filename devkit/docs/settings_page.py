"""reference/settings.md, written from the code at every build: the hub's
settings (the rows sql/head/tables/taskhub_settings.sql installs), the
provider's (TaskHubConfig's fields and the comments above them), the
workers' (WorkerOptions with WorkerCore's defaults) and the migration's
options (`-x` names). A setting added to the code is on the page at the
next build; one without a comment fails it."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from pathlib import Path

from provider.config import TaskHubConfig
from provider.deploy.migration_options import X_ARGUMENTS
from provider.worker.core import WorkerCore, WorkerOptions

ROOT = Path(__file__).resolve().parent.parent.parent
SETTINGS_SQL = ROOT / "sql" / "head" / "tables" / "taskhub_settings.sql"
# The variables the package and its tests read: (name, read by, what it is).
ENVIRONMENT = (
    ("`DATABASE_URL`", "`taskhub-pg`, `alembic`", "the database, when no `--url` or `-x url`"),
    (
        "`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSERVICE`, `PGPASSFILE`, ...",
        "every connection",
        "libpq's own; a password belongs in `~/.pgpass`, never in a URL on a command line",
    ),
    (
        "`TASKHUB_DASHBOARD_USERS_FILE`, `TASKHUB_DASHBOARD_USERS`",
        "`taskhub-pg dashboard`",
        "a users file's path (`--users-file`), and account lines like the file's"
        " ([Who may open it](../ops.md#who-may-open-it))",
    ),
    (
        "`TASKHUB_DASHBOARD_SECRET_FILE`, `TASKHUB_DASHBOARD_SECRET`",
        "`taskhub-pg dashboard`",
        "a file holding the secret the forms' CSRF tokens and the actions' confirmations"
        " are signed with (`--secret-file`), or the secret itself; one of them, at least"
        " 32 characters, the same on every replica of a hub's dashboard; without either,"
        " each process makes its own ([Replicas behind a load balancer]"
        "(../ops.md#replicas-behind-a-load-balancer))",
    ),
    (
        "`TASKHUB_TEST_DATABASE_URL`",
        "the test kit's fixtures",
        "the server your handlers' tests run against (else `DATABASE_URL`;"
        " [Testing your handlers](../testing-kit.md))",
    ),
)
# One row of the INSERT: ('name', 'value', 'a description' 'in pieces'),
_ROW = re.compile(
    r"\(\s*'(?P<name>\w+)',\s*'(?P<value>[^']*)',\s*(?P<text>(?:'(?:[^']|'')*'\s*)+)\)"
)
_PIECE = re.compile(r"'((?:[^']|'')*)'")


def settings_page() -> str:
    lines = [
        "# Settings",
        "",
        "Written from the code at every build. Where each is set: the hub's in",
        "its `taskhub_settings` table (plain SQL, checked by the table), the",
        "provider's as `TaskHub.connect(url, schema, **settings)` keywords, the",
        "workers' as the workers' keywords, the migration's as `taskhub-pg",
        "upgrade` options or `alembic -x name=value`.",
        "",
        "## The hub: `taskhub_settings`",
        "",
        "```sql",
        "UPDATE orders.taskhub_settings SET value = '100'",
        " WHERE name = 'dead_letter_after_attempts';",
        "```",
        "",
        "A value out of range is refused by the table's check (SQLSTATE 23514) and",
        "changes nothing; `taskhub-pg check` names a setting out of range.",
        "",
        "| setting | default | what it does |",
        "|---|---|---|",
    ]
    for name, value, text in hub_settings():
        lines.append(f"| `{name}` | `{value}` | {_cell(text)} |")
    lines += [
        "",
        "## The provider: `TaskHubConfig`",
        "",
        "`url` and `schema` are `connect`'s first two arguments; the others are",
        "keywords (`TaskHubSettings` types them for `mypy --strict`).",
        "",
        "| setting | default | what it does |",
        "|---|---|---|",
    ]
    comments = field_comments(TaskHubConfig)
    for field in dataclasses.fields(TaskHubConfig):
        default = "" if field.default is dataclasses.MISSING else f"`{field.default!r}`"
        lines.append(f"| `{field.name}` | {default} | {_cell(comments[field.name])} |")
    lines += [
        "",
        "## The workers: `ActivityWorker`, `AsyncActivityWorker`",
        "",
        "Keywords of both workers, after the hub "
        "([Workers](../workers.md) says how they fit together).",
        "",
        "| setting | default | what it does |",
        "|---|---|---|",
    ]
    defaults = inspect.signature(WorkerCore.__init__).parameters
    for name, text in field_comments(WorkerOptions).items():
        lines.append(f"| `{name}` | `{defaults[name].default!r}` | {_cell(text)} |")
    lines += [
        "",
        "## The migration",
        "",
        "`alembic -x name=value` takes these names; `taskhub-pg upgrade` takes",
        "them as options (`--runtime-role`, ...; [the command line](cli.md)). An",
        "`-x` name that is not one of them is refused, not ignored.",
        "",
        ", ".join(f"`{name}`" for name in X_ARGUMENTS),
        "",
        "## The environment",
        "",
        "| variable | read by | what it is |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {reader} | {what} |" for name, reader, what in ENVIRONMENT]
    lines.append("")
    return "\n".join(lines)


def hub_settings() -> list[tuple[str, str, str]]:
    """(name, default, description) of each row the settings table starts with."""
    rows = []
    for row in _ROW.finditer(SETTINGS_SQL.read_text(encoding="utf-8")):
        text = "".join(piece.replace("''", "'") for piece in _PIECE.findall(row["text"]))
        rows.append((row["name"], row["value"], text))
    if not rows:
        raise ValueError(f"no settings found in {SETTINGS_SQL}")
    return rows


def field_comments(cls: type) -> dict[str, str]:
    """Each field's comment: the `#` lines just above it, or the one after it
    on its line. A field with neither fails the build."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    found: dict[str, str] = {}
    body = ast.parse(source).body[0]
    assert isinstance(body, ast.ClassDef)
    for node in body.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        row = node.lineno - 1
        inline = lines[row].partition("#")[2].strip()
        above: list[str] = []
        while row > 0 and lines[row - 1].strip().startswith("#"):
            row -= 1
            above.insert(0, lines[row].strip().lstrip("#").strip())
        found[node.target.id] = " ".join(above) or inline
    missing = [name for name, text in found.items() if not text]
    if missing:
        raise ValueError(f"{cls.__name__} fields without a comment: {missing}")
    return found


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
