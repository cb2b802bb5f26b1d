"""The digest of what a revision runs: the statements its upgrade() and
downgrade() issue, rendered offline for a fixed schema, with the tables each
direction locks. migrations/released.json pins it for every released revision
(devkit/schema/release.py writes it there), and
tests/deploy/test_released_revisions.py checks each.

It covers whatever decides those statements: the revision's file, its SQL
files, the released files a downgrade puts back, and the Python steps that
render them (provider/deploy/migration_steps.py, sql_files.py, turn_form.py).
A change to any of them that changes a statement fails the pin; moving or
renaming Python that runs the same statements does not.

    python -m devkit.schema.revision_digest 0019    # prints the digest to pin
"""

from __future__ import annotations

import hashlib
import io
import sys
from collections.abc import Sequence

from alembic.operations import Operations
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from provider.deploy import migrate, table_locks
from provider.deploy.migration_options import MigrationOptions

# Any valid name: the statements are the same for every schema but for it.
DIGEST_SCHEMA = "revision_digest"


def statements(revision: str, direction: str) -> str:
    """The SQL that revision's upgrade() or downgrade() issues, as --sql
    writes it (without what migrations/env.py adds around every revision)."""
    output = io.StringIO()
    config = migrate.alembic_config(MigrationOptions(schema=DIGEST_SCHEMA), output)
    script = ScriptDirectory.from_config(config)
    module = script.get_revision(revision).module
    with EnvironmentContext(config, script):
        context = MigrationContext.configure(
            dialect_name="postgresql",
            opts={"as_sql": True, "output_buffer": output, "literal_binds": True},
        )
        with Operations.context(context):
            getattr(module, direction)()
    return output.getvalue()


def revision_digest(revision: str) -> str:
    config = migrate.alembic_config(MigrationOptions(schema=DIGEST_SCHEMA))
    module = ScriptDirectory.from_config(config).get_revision(revision).module
    digest = hashlib.sha256()
    for direction, is_upgrade in (("upgrade", True), ("downgrade", False)):
        locks = table_locks.revision_locks(module, revision, is_upgrade)
        digest.update(f"-- {direction} of {revision}, locking {', '.join(locks)}\n".encode())
        digest.update(statements(revision, direction).encode())
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    revisions = list(sys.argv[1:] if argv is None else argv)
    if not revisions:
        print("usage: python -m devkit.schema.revision_digest REVISION...", file=sys.stderr)
        return 2
    for revision in revisions:
        print(f"{revision} {revision_digest(revision)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
