"""Alembic environment for taskhub-pg: a migration run, built from Alembic's
context and run (provider/deploy/runner.py says what a run does).

Its options (schema, url, runtime role, Citus, lock policy) are one
MigrationOptions (provider/deploy/migration_options.py): the one a caller
stored (provider.deploy.migrate, taskhub-pg), else the one the alembic
command line's -x arguments make.
"""

from __future__ import annotations

import logging.config

from alembic import context

from provider.deploy.runner import MigrationRunner

# Run by the alembic command: alembic.ini's loggers (the lock waits and the
# summary of provider/deploy/run_report.py among them). From Python, the caller's.
if context.config.config_file_name:
    logging.config.fileConfig(context.config.config_file_name, disable_existing_loggers=False)

MigrationRunner.for_alembic_run().run()
