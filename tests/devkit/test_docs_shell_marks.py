"""Every shell block of the README and the docs is marked runnable (the
suite runs it) or illustrative (with the reason). No database."""

from __future__ import annotations

from tests.support.doc_blocks import pages, runnable_pages, shell_blocks


def test_every_shell_block_is_marked_runnable_or_illustrative_with_a_reason() -> None:
    blocks = [block for page in pages() for block in shell_blocks(page)]
    assert len(blocks) > 30
    assert [block.where for block in blocks if block.mark is None] == []
    assert [b.where for b in blocks if b.mark == "illustrative" and not (b.why or "").strip()] == []


def test_the_pages_that_deploy_have_runnable_blocks() -> None:
    names = {page.name for page in runnable_pages()}
    assert {"README.md", "getting-started.md", "deploying.md", "ops.md"} <= names
