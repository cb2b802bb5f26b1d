"""A released revision never changes: databases that applied it must be able
to trust that replaying it gives the same schema. To change a function, ship
a new SQL file in a new revision. When a revision is released, add its digest
here."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RELEASED = {
    "0004_operations": "f55aec0d4ee3cf376a711d010bdf0f81bb423e3f7069b33b1c06203eb9046109",
    "0003_lease_keeper": "3548ed26a19a18095c32c64201247a6c81e9e4e3b4535051dc56b8e24ceb7f80",
    "0002_full_contract": "2456ec0fa948bc90a79e76e3556ecdb9a4fc242d8b50c047487c939c8f471e0c",
    "0001_queue_core": "9d12dbd0532826666bbf8a48f80545a752fc1da56d347f4d3762eeaac8a4bbec",
}


def revision_digest(name: str) -> str:
    digest = hashlib.sha256()
    files = sorted((REPO / "sql" / name).glob("*.sql"))
    files.append(REPO / "migrations" / "versions" / f"{name}.py")
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_released_revision_is_unchanged(name: str) -> None:
    assert revision_digest(name) == RELEASED[name], (
        f"revision {name} was released and must not change; ship a new revision instead"
    )
