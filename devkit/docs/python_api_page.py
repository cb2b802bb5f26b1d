"""docs/reference/python-api.md, written from `provider.__all__`: every
public name, and for each class its public methods (those it inherits from
the package's private bases too: Client's `find` and `cancel` come from
wrappers over its plans), each with its signature and docstring, and for
each record its fields.

The page is committed, so that it also reads on GitHub, where the README
links it. Write it again after changing the public surface:

    .venv/bin/python -m devkit.docs.python_api_page

tests/devkit/test_reference_coverage.py fails while the committed page
differs from what this writes, and the docs build warns (so fails, strict).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
import textwrap
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import provider

CHECKOUT = Path(__file__).resolve().parent.parent.parent
PAGE = CHECKOUT / "docs" / "reference" / "python-api.md"
COMMAND = ".venv/bin/python -m devkit.docs.python_api_page"


@dataclass(frozen=True)
class Section:
    title: str
    intro: str
    modules: tuple[str, ...]  # where its names are defined (a prefix each)


# Each public name goes under the first section whose module prefix its own
# module starts with; a name from anywhere else, under the last, so that a
# new name is never left off the page.
SECTIONS = (
    Section(
        "Settings and logs",
        "What a hub, a client or a worker is opened with ([Settings](settings.md)),"
        " and the logs' JSON form.",
        ("provider.config", "provider.logs"),
    ),
    Section(
        "Clients, hubs and the scheduler",
        "`Client` is what an application starts, watches, finds, cancels and restarts"
        " orchestrations with; `TaskHub` is the duroxide runtime's contract"
        " ([The provider and the client](../provider.md),"
        " [Flow control](../flow-control.md)). Each has an asyncio twin with the same"
        " methods, awaited.",
        ("provider.client",),
    ),
    Section(
        "Workers",
        "Activity workers and the leases they keep ([Workers](../workers.md)).",
        ("provider.worker",),
    ),
    Section(
        "Values",
        "The records the calls take and return.",
        ("provider.types", "provider.shapes"),
    ),
    Section(
        "Errors",
        (provider.errors.__doc__ or "").strip()
        + "\n\nThe SQLSTATE behind each: [Exit codes and SQLSTATEs](errors.md).",
        ("provider.errors",),
    ),
    Section("Other names", "", ()),
)


def python_api_page() -> str:
    lines = [
        "# Python API",
        "",
        "<!-- Written by devkit/docs/python_api_page.py: do not edit; run",
        f"     {COMMAND} -->",
        "",
        "Everything below is importable from `provider` (`from provider import",
        "TaskHub`); the package's `__all__` is the public surface, and nothing else is",
        "promised between releases. This page is written from it: every public name,",
        "each class's public methods with their signatures and docstrings, each",
        "record's fields.",
        "",
    ]
    placed = _by_section(provider.__all__)
    for section in SECTIONS:
        names = placed.get(section.title, [])
        if not names:
            continue
        lines += [f"## {section.title}", ""]
        if section.intro:
            lines += [section.intro, ""]
        for name in names:
            lines += _name_section(name, getattr(provider, name))
    return "\n".join(lines).rstrip("\n") + "\n"


def _by_section(names: list[str]) -> dict[str, list[str]]:
    """Each public name under its section's title; a sync class beside its
    Async twin (Client, AsyncClient), classes before functions."""
    placed: dict[str, list[str]] = {}
    for name in sorted(names, key=_order):
        module = _home(name, getattr(provider, name)).__name__
        section = next(
            (s for s in SECTIONS if any(module.startswith(prefix) for prefix in s.modules)),
            SECTIONS[-1],
        )
        placed.setdefault(section.title, []).append(name)
    return placed


def _order(name: str) -> tuple[bool, str, bool]:
    return name[0].islower(), name.removeprefix("Async"), name.startswith("Async")


def _home(name: str, obj: object) -> ModuleType:
    """The module that defines `name`. A type alias (InstanceStatusName =
    Literal[...]) is typing's object: found as the module assigning it."""
    module = sys.modules.get(getattr(obj, "__module__", "") or "")
    if module is not None and module.__name__.startswith("provider"):
        return module
    for candidate in list(sys.modules.values()):
        if candidate is None or not candidate.__name__.startswith("provider."):
            continue
        if vars(candidate).get(name) is obj and _assignment_line(candidate, name) is not None:
            return candidate
    return provider


# -- one public name --------------------------------------------------------------


def _name_section(name: str, obj: Any) -> list[str]:
    if inspect.isclass(obj) and not typing.is_typeddict(obj):
        return _class_section(name, obj)
    if inspect.isclass(obj):
        return _typeddict_section(name, obj)
    if inspect.isfunction(obj):
        lines = [f"### {name}", "", f"`{name}{_signature(obj, drop_first=False)}`", ""]
        return lines + _docstring(obj)
    return _alias_section(name, obj)


def _class_section(name: str, cls: type) -> list[str]:
    lines = [f"### {name}", "", f"`class {name}{_class_signature(cls)}`", ""]
    bases = _shown_bases(cls)
    if bases:
        lines += [f"Based on {', '.join(bases)}.", ""]
    lines += _docstring(cls)
    if dataclasses.is_dataclass(cls):
        lines += _fields(cls)
    for member, raw in _public_members(cls):
        lines += _member_section(cls, name, member, raw)
    return lines


def _class_signature(cls: type) -> str:
    """Its constructor's arguments; none shown for a class that hides them."""
    try:
        return _signature(cls, drop_first=False).removesuffix(" -> None")
    except (TypeError, ValueError):
        return ""


def _shown_bases(cls: type) -> list[str]:
    """The bases a reader can look up: public names and Python's own classes,
    not the package's private building blocks (ProcedureClient, WorkerCore)."""
    shown = []
    for base in cls.__bases__:
        if base is object:
            continue
        if base.__name__ in provider.__all__:
            shown.append(f"`{base.__name__}`")
        elif not base.__module__.startswith("provider"):
            shown.append(f"`{_public_path(base)}`")
    return shown


def _public_path(cls: type) -> str:
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def _public_members(cls: type) -> Iterator[tuple[str, Any]]:
    """The public methods and properties a user can call on `cls`: its own,
    then those of its private bases, nearest first, each once. Those a public
    base defines are on that base's section (TaskHubError.renamed)."""
    seen: set[str] = set()
    for owner in cls.__mro__:
        if not owner.__module__.startswith("provider"):
            continue  # object's, Exception's, logging.Formatter's
        if owner is not cls and owner.__name__ in provider.__all__:
            break
        for member, raw in vars(owner).items():
            if member.startswith("_") or member in seen or not _is_callable_member(raw):
                continue
            seen.add(member)
            yield member, raw


def _is_callable_member(raw: object) -> bool:
    return inspect.isfunction(raw) or isinstance(raw, staticmethod | classmethod | property)


def _member_section(cls: type, name: str, member: str, raw: Any) -> list[str]:
    lines = [f"#### {name}.{member}", "", f"`{_member_line(member, raw)}`", ""]
    text = _member_docstring(cls, member)
    return [*lines, _escaped(text), ""] if text else lines


def _member_docstring(cls: type, member: str) -> str:
    """Its docstring, or that of the package's method it overrides (Client.run
    says what ProcedureClient.run does); not Python's own (logging's format)."""
    for owner in cls.__mro__:
        if not owner.__module__.startswith("provider") or member not in vars(owner):
            continue
        raw = vars(owner)[member]
        function = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
        if function.__doc__:
            return inspect.cleandoc(function.__doc__)
    return ""


def _member_line(member: str, raw: Any) -> str:
    if isinstance(raw, property):
        returns = inspect.signature(raw.fget).return_annotation if raw.fget else None
        shown = "" if returns in (None, inspect.Signature.empty) else f": {_annotation(returns)}"
        return f"property {member}{shown}"
    if isinstance(raw, staticmethod):
        return f"staticmethod {member}{_signature(raw.__func__, drop_first=False)}"
    if isinstance(raw, classmethod):
        return f"classmethod {member}{_signature(raw.__func__, drop_first=True)}"
    prefix = "async " if inspect.iscoroutinefunction(raw) else ""
    return f"{prefix}{member}{_signature(raw, drop_first=True)}"


def _typeddict_section(name: str, cls: type) -> list[str]:
    lines = [f"### {name}", "", f"`class {name}(TypedDict)`", ""]
    lines += _docstring(cls)
    comments = _field_comments(cls)
    lines += ["Keys:", ""]
    for key, annotation in cls.__annotations__.items():
        lines.append(_field_line(key, _annotation(annotation), None, comments.get(key, "")))
    return [*lines, ""]


def _alias_section(name: str, obj: object) -> list[str]:
    """A type alias: its definition, and the comment above its line."""
    home = _home(name, obj)
    lines = [f"### {name}", "", f"`{name} = {_annotation(obj)}`", ""]
    found = _assignment_line(home, name)
    lines_of = inspect.getsource(home).splitlines()
    comment = _comment_above(lines_of, found) if found is not None else ""
    return [*lines, comment, ""] if comment else lines


# -- fields ------------------------------------------------------------------------


def _fields(cls: Any) -> list[str]:
    comments = _field_comments(cls)
    lines = ["Fields:", ""]
    for field in dataclasses.fields(cls):
        default = _field_default(field)
        lines.append(
            _field_line(field.name, _annotation(field.type), default, comments.get(field.name, ""))
        )
    return [*lines, ""]


def _field_default(field: dataclasses.Field[Any]) -> str | None:
    if field.default is not dataclasses.MISSING:
        return _default(field.default)
    if field.default_factory is not dataclasses.MISSING:
        return f"{getattr(field.default_factory, '__name__', 'factory')}()"
    return None


def _field_line(name: str, annotation: str, default: str | None, comment: str) -> str:
    code = f"{name}: {annotation}" + (f" = {default}" if default is not None else "")
    return f"- `{code}`" + (f": {_escaped(comment)}" if comment else "")


def _field_comments(cls: type) -> dict[str, str]:
    """Each field's comment in the source (the `#` lines above it, or the
    one after it on its line), for the fields that have one."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    body = ast.parse(source).body[0]
    found: dict[str, str] = {}
    for node in body.body if isinstance(body, ast.ClassDef) else []:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            row = node.lineno - 1
            inline = lines[row].partition("  #")[2].strip()
            found[node.target.id] = _comment_above(lines, row) or inline
    return {name: text for name, text in found.items() if text}


def _comment_above(lines: list[str], row: int) -> str:
    """The `#` lines just above line `row` (0-based), as one sentence."""
    above: list[str] = []
    while row > 0 and lines[row - 1].strip().startswith("#"):
        row -= 1
        above.insert(0, lines[row].strip().lstrip("#").strip())
    return " ".join(above)


def _assignment_line(module: ModuleType, name: str) -> int | None:
    """The 0-based line where `module` assigns `name` at its top level."""
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return None
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.lineno - 1
    return None


# -- signatures and docstrings ---------------------------------------------------------


class _Shown(str):
    """An annotation or default as text, printed unquoted in a signature."""

    def __repr__(self) -> str:
        return str(self)


def _signature(obj: Callable[..., Any], *, drop_first: bool) -> str:
    """`(arguments) -> result` as the source writes them (the package's
    annotations are strings: `from __future__ import annotations`). A method
    made by plans.blocking or plans.awaitable has its plan's signature
    (inspect follows __wrapped__), returning what the plan's result is."""
    signature = inspect.signature(obj)
    parameters = list(signature.parameters.values())[1 if drop_first else 0 :]
    shown = [
        p.replace(
            annotation=_shown_or_empty(p.annotation),
            default=p.default if p.default is p.empty else _Shown(_default(p.default)),
        )
        for p in parameters
    ]
    returns = signature.return_annotation
    if returns is not signature.empty and hasattr(obj, "__wrapped__"):
        returns = _unplanned(_annotation(returns))
    return str(signature.replace(parameters=shown, return_annotation=_shown_or_empty(returns)))


def _unplanned(annotation: str) -> str:
    """Plan[T] -> T: what the client's wrapper of a plan returns."""
    found = re.fullmatch(r"Plan\[(.*)\]", annotation)
    return found.group(1) if found else annotation


def _shown_or_empty(annotation: Any) -> Any:
    return annotation if annotation is inspect.Parameter.empty else _Shown(_annotation(annotation))


def _annotation(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, typing.ForwardRef):  # a TypedDict's string annotation
        return annotation.__forward_arg__
    if isinstance(annotation, type):
        return annotation.__qualname__
    return re.sub(r"\b(?:typing|provider(?:\.\w+)*)\.", "", repr(annotation))


def _default(value: object) -> str:
    """A default as the reader would write it; never an object's address,
    which would change the page at every run."""
    if inspect.isroutine(value):  # time.monotonic, not <built-in function monotonic>
        home = value.__module__
        return value.__qualname__ if home.startswith("provider") else f"{home}.{value.__qualname__}"
    shown = "..." if value is Ellipsis else repr(value)
    if shown == "<factory>":  # a dataclass field's default_factory, in its signature
        return "(made anew)"
    return "..." if " at 0x" in shown else shown


def _docstring(obj: object) -> list[str]:
    text = _own_docstring(obj)
    return [_escaped(text), ""] if text else []


def _own_docstring(obj: object) -> str:
    """Its own docstring: not a base's (AsyncActivityWorker has none of its
    own, WorkerCore's is about WorkerCore), nor one a dataclass writes for
    itself (its signature)."""
    if not inspect.isclass(obj):
        return inspect.getdoc(obj) or ""
    text = inspect.cleandoc(vars(obj).get("__doc__") or "")
    return "" if text.startswith(f"{obj.__name__}(") else text


def _escaped(text: str) -> str:
    """Docstring prose as Markdown: a `<` outside code spans and indented
    examples is text, not a tag the page would swallow (`<instance>`)."""
    return "\n".join(
        line if line.startswith("    ") else _escaped_line(line) for line in text.split("\n")
    )


def _escaped_line(line: str) -> str:
    parts = re.split(r"(`[^`]*`)", line)
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;") for part in parts)


def write() -> bool:
    """Write the page; whether it changed."""
    fresh = python_api_page()
    if PAGE.exists() and PAGE.read_text(encoding="utf-8") == fresh:
        return False
    PAGE.write_text(fresh, encoding="utf-8")
    return True


if __name__ == "__main__":
    changed = write()
    print(f"{PAGE.relative_to(CHECKOUT)}: {'written' if changed else 'up to date'}")
