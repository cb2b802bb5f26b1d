"""A copy of the migrations with one more revision on top, written by a test:
what a defective next revision would do, run through the real env.py."""

from __future__ import annotations

import shutil
from pathlib import Path

from alembic import command

from provider.deploy import migrate
from provider.deploy.migration_options import MigrationOptions
from provider.deploy.run_report import MigrationRun
from provider.resources import migrations_dir

REVISION = """
from alembic import op

revision = "9001"
down_revision = {head!r}
branch_labels = None
depends_on = None

LOCKS_ON_UPGRADE: list[str] = {locks!r}
LOCKS_ON_DOWNGRADE: list[str] = []


def upgrade() -> None:
    op.execute({sql!r})


def downgrade() -> None:
    pass
"""


def migrations_with_revision(tmp_path: Path, sql: str, locks: list[str] | None = None) -> Path:
    """migrations/ copied under tmp_path, with revision 9001 on top running `sql`."""
    copy = tmp_path / "migrations"
    shutil.copytree(migrations_dir(), copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "versions" / "9001_next.py").write_text(
        REVISION.format(head=migrate.head_revision(), locks=locks or [], sql=sql)
    )
    return copy


def upgrade_with(location: Path, url: str, schema: str) -> MigrationRun:
    config = migrate.alembic_config(MigrationOptions.build(url=url, schema=schema))
    config.set_main_option("script_location", str(location))
    run = MigrationRun(schema)
    config.attributes["run_report"] = run
    command.upgrade(config, "heads")
    return run
