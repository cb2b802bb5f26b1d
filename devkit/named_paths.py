"""The repository paths that prose names, and which of them are gone.

Docs and comments point a reader at files (`provider/deploy/runner.py`,
`sql/head/...`, `tests/...py`) and at modules to run (`python -m bench.grid`).
A rename leaves such a pointer behind with nothing to notice it, so this
reads them all and names each one that leads nowhere:

* in docs/**/*.md and README.md: a path from the repository's root, and the
  module of every `python -m`;
* in the comments and docstrings of provider/, devkit/ and migrations/ (and
  the revision skeleton): the same, and also a file named relative to where
  it is read (`worker/slots.py` from provider/, `head/tables/instances.sql`
  from sql/) or by its bare name (`runner.py`), which must be some file's name.

A function's version is named by its whole text's path, whichever way it
is kept (`sql/functions/ack_worker/0008.sql` is 0008.patch:
provider/deploy/sql_files.py), and a page of the site by its path in
mkdocs.yml's nav (the reference pages are written at build). Not pointers:
a pattern (`sql/functions/<name>/NNNN.sql`, `sql/guard/*.sql`), a module of
another package (`psycopg.sql`), a file outside the repository (`../x`), a
folder `.gitignore` names (what a run writes, like bench/results/), and the
wheel's names for migrations/ and sql/ (pyproject.toml's package-dir).

    python -m devkit.named_paths      # prints each stale pointer; exit 1 if any
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import sys
import tokenize
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The repository's top-level folders: a path that starts with one of them is
# a path from the root.
TOP = (
    *("provider", "devkit", "migrations", "sql", "tests", "docs"),
    *("bench", "drills", "scripts", "requirements", ".ci"),
)
# The packages `python -m` may name.
PACKAGES = ("provider", "devkit", "bench", "drills", "scripts", "tests")
# Where a relative name in a comment may start from, besides its own folder.
RELATIVE_ROOTS = ("provider", "sql", "sql/head", "docs", "migrations")
EXTENSIONS = "py|md|sql|patch|mako|toml|txt|json|yml|yaml|ini|html|css|js|png|sh"

_CHARS = r"[\w./<>*{}$…-]"
# A path from the root: not inside a longer path or a URL.
_ROOTED = re.compile(rf"(?<![\w./-])((?:{'|'.join(map(re.escape, TOP))})/{_CHARS}*)")
# A file name with one of the extensions, with or without folders before it.
# Not followed by more of a name (a second extension); a full stop may follow.
_NAMED = re.compile(rf"(?<![\w./-])((?:{_CHARS}+/)*[\w<>*{{}}$-]+\.(?:{EXTENSIONS}))(?!\w|\.\w)")
_RUN_MODULE = re.compile(rf"-m\s+((?:{'|'.join(PACKAGES)})[\w.<>]*)")
_PATTERN_MARKS = ("<", ">", "*", "{", "}", "$", "NNNN", "...", "…")
_SITE_PAGE = re.compile(r":\s*([\w/.-]+\.md)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Pointer:
    """One name, where it was read, and why it leads nowhere."""

    source: str  # the file it was read in, from the root
    line: int
    name: str
    kind: str  # "path", "relative", "module"

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.kind} {self.name} does not exist"


def prose_of_python(text: str) -> Iterator[tuple[int, str]]:
    """Each comment and docstring of a module, with its first line."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno, first.value.value


def _is_pattern(name: str) -> bool:
    return any(mark in name for mark in _PATTERN_MARKS)


def _is_module(name: str) -> bool:
    package = name.split(".")[0]
    return package not in PACKAGES and importlib.util.find_spec(package) is not None


def _trimmed(name: str) -> str:
    # A sentence's full stop or a closing mark is not part of the path.
    return name.rstrip(".,;:)'`\"")


def not_pointers(repo: Path) -> tuple[str, ...]:
    """Prefixes that name no file of the checkout by design: the folders
    .gitignore names (what runs and builds write) and the wheel's names."""
    ignored = (repo / ".gitignore").read_text().splitlines()
    outputs = [line for line in ignored if line.endswith("/") and not line.startswith(("*", "."))]
    pyproject = tomllib.loads((repo / "pyproject.toml").read_text())
    wheel = pyproject["tool"]["setuptools"]["package-dir"]
    return (*outputs, *(name.replace(".", "/") for name in wheel))


@dataclass
class Checker:
    """Judges the names read in one checkout."""

    repo: Path

    def __post_init__(self) -> None:
        self.skipped = not_pointers(self.repo)
        self.file_names = {path.name for path in self.repo.iterdir()} | {
            path.name
            for top in TOP
            if (self.repo / top).is_dir()
            for path in (self.repo / top).rglob("*")
        }
        self.site_pages = set(_SITE_PAGE.findall((self.repo / "mkdocs.yml").read_text()))

    def exists(self, path: Path) -> bool:
        if path.exists():
            return True
        # A function's version kept as a patch on the one before.
        return path.parent.parent.name == "functions" and path.with_suffix(".patch").exists()

    def rooted(self, source: str, line: int, text: str) -> Iterator[Pointer]:
        for match in _ROOTED.finditer(text):
            name = _trimmed(match.group(1))
            if _is_pattern(name) or name.startswith(self.skipped):
                continue
            if not self.exists(self.repo / name):
                yield Pointer(source, line, name, "path")

    def modules(self, source: str, line: int, text: str) -> Iterator[Pointer]:
        for match in _RUN_MODULE.finditer(text):
            module = match.group(1).rstrip(".")
            if _is_pattern(module):
                continue
            base = self.repo / module.replace(".", "/")
            if not (base.with_suffix(".py").exists() or (base / "__main__.py").exists()):
                yield Pointer(source, line, module, "module")

    def relative(self, source: str, line: int, text: str) -> Iterator[Pointer]:
        here = (self.repo / source).parent
        for match in _NAMED.finditer(text):
            name = _trimmed(match.group(1))
            if _is_pattern(name) or name.startswith((*TOP, "../", *self.skipped)):
                continue
            if "/" not in name:
                # psycopg.sql is a module of a package, not a file.
                found = name in self.file_names or _is_module(name)
            else:
                starts = (here, here.parent, *(self.repo / root for root in RELATIVE_ROOTS))
                found = name in self.site_pages or any(self.exists(s / name) for s in starts)
            if not found:
                yield Pointer(source, line, name, "relative")

    def in_doc(self, source: str, text: str) -> Iterator[Pointer]:
        for number, line in enumerate(text.splitlines(), 1):
            yield from self.rooted(source, number, line)
            yield from self.modules(source, number, line)

    def in_code(self, source: str, text: str) -> Iterator[Pointer]:
        prose = prose_of_python(text) if source.endswith(".py") else enumerate(text.splitlines(), 1)
        for first, block in prose:
            for offset, line in enumerate(block.splitlines()):
                yield from self.rooted(source, first + offset, line)
                yield from self.modules(source, first + offset, line)
                yield from self.relative(source, first + offset, line)


def docs(repo: Path) -> list[Path]:
    return [*sorted((repo / "docs").rglob("*.md")), repo / "README.md"]


def code(repo: Path) -> list[Path]:
    tops = ("provider", "devkit", "migrations")
    modules = [path for top in tops for path in (repo / top).rglob("*.py")]
    return [*sorted(modules), repo / "migrations" / "script.py.mako"]


def stale_pointers(repo: Path = REPO) -> list[Pointer]:
    """Every name in the docs and the code's prose that leads nowhere."""
    checker = Checker(repo)
    found: list[Pointer] = []
    for path in docs(repo):
        found += checker.in_doc(path.relative_to(repo).as_posix(), path.read_text())
    for path in code(repo):
        found += checker.in_code(path.relative_to(repo).as_posix(), path.read_text())
    return found


def main(argv: Iterable[str] = ()) -> int:
    found = stale_pointers()
    for pointer in found:
        print(pointer)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
