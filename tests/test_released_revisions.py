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
    "0003_lease_keeper": "3548ed26a19a18095c32c64201247a6c81e9e4e3b4535051dc56b8e24ceb7f80",
    "0002_full_contract": "d4c746fec8461d567d6742e9f008974c64bdb03cef6dac3f574887467685438c",
    "0001_queue_core": "7c06284a67dda731667db5b5e576faa55df5e357d1f576553a2e04c9f44b3bf8",
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
