"""Alembic environment for taskhub-pg: a migration run, built from Alembic's
context and run (provider/deploy/runner.py says what a run does).

Its options (schema, url, runtime role, Citus, lock policy) are one
MigrationOptions (provider/deploy/migration_options.py): the one a caller
stored (provider.deploy.migrate, taskhub-pg), else the one the alembic
command line's -x arguments make.
"""

from __future__ import annotations

from alembic import context

from provider.deploy.run_report import configure_logging
from provider.deploy.runner import MigrationRunner

# The alembic command's logging (alembic.ini's, or the same without one); from Python, the caller's.
configure_logging(context.config.config_file_name, context.config.cmd_opts is not None)

MigrationRunner.for_alembic_run().run()
