"""Every Python block of the README and the docs type-checks under mypy
--strict against the package, so an example that no longer matches the API
is found here, not by a reader. No database.

A block that is a fragment (it uses a `hub` or a `url` made earlier on the
page) says what it assumes in a comment just before it, which is prepended
when checking and not shown on the site:

    <!-- prelude
    from provider import TaskHub
    hub: TaskHub
    -->

A block with `await` at its top level is checked as the body of a coroutine.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.paths import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
# The comments just before a block (each its own), then the block.
_BLOCK = re.compile(r"((?:<!--.*?-->\n)*)```python\n(.*?)```", re.S)
_PRELUDE = re.compile(r"<!--\s*prelude\n(.*?)-->", re.S)
_TOP_LEVEL_AWAIT = re.compile(r"^(?:await |async (?:with|for) )", re.M)


def blocks() -> list[tuple[str, str]]:
    """(a module name, the code mypy checks) for each Python block."""
    found = []
    for page in PAGES:
        for n, match in enumerate(_BLOCK.finditer(page.read_text())):
            prelude = "".join(p.group(1) for p in _PRELUDE.finditer(match.group(1)))
            body = match.group(2)
            if _TOP_LEVEL_AWAIT.search(body):
                body = "async def _example() -> None:\n" + textwrap.indent(body, "    ")
            name = re.sub(r"\W", "_", page.stem.lower())
            found.append((f"doc_{name}_{n}", prelude + body))
    return found


@pytest.mark.slow
def test_every_python_block_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    examples = blocks()
    assert len(examples) >= 14
    for name, code in examples:
        (tmp_path / f"{name}.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(tmp_path)],
        cwd=REPO,  # pyproject.toml's settings: duroxide has no type hints
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-4000:]
