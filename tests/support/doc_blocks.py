"""The shell blocks of the README and the docs pages, and how each is marked.

Every ```sh (or bash, shell, console) block carries a comment on the line
before it, one of:

* `<!-- runnable -->`: tests/ops/test_docs_shell_blocks.py runs it, with the
  page's other runnable blocks in order, against a throwaway database;
* `<!-- illustrative: why -->`: it names a server, a file or an id of the
  reader's, or starts something that keeps running; the reason says which,
  and where the suite covers it instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tests.support.paths import REPO

_BLOCK = re.compile(
    r"(?:<!-- (?P<mark>runnable|illustrative)(?::\s*(?P<why>.*?))? -->\n)?"
    r"(?P<indent>[ \t]*)```(?:sh|bash|shell|console)\n(?P<body>.*?)(?P=indent)```",
    re.DOTALL,
)


@dataclass(frozen=True)
class ShellBlock:
    page: Path
    line: int
    mark: str | None  # "runnable", "illustrative" or None (unmarked)
    why: str | None
    body: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def shell_blocks(page: Path) -> list[ShellBlock]:
    text = page.read_text(encoding="utf-8")
    found = []
    for block in _BLOCK.finditer(text):
        indent = block["indent"]
        body = "".join(
            line[len(indent) :] if line.startswith(indent) else line
            for line in block["body"].splitlines(keepends=True)
        )
        line = text.count("\n", 0, block.start("indent")) + 1
        found.append(ShellBlock(page, line, block["mark"], block["why"], body))
    return found


def runnable_pages() -> list[Path]:
    return [page for page in pages() if any(b.mark == "runnable" for b in shell_blocks(page))]
