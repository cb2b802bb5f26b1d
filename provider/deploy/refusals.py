"""How a migration run ends when it does not finish: the deploy layer's own
errors, so that its callers (the command line among them) need neither
Alembic's nor SQLAlchemy's types. provider.deploy.migrate raises these, or
the psycopg error the server raised; the alembic command line prints a
refusal as one line (provider/deploy/runner.py hands it a CommandError)."""

from __future__ import annotations


class MigrationRefused(Exception):
    """The run refused, or stopped and rolled back; its one-line message says
    what was left (each revision of an upgrade from 0006 on commits on its own)."""


class MigrationLocksNotTaken(MigrationRefused):
    """Every attempt of a run met a lock it could not take in time; the
    revision it was at rolled back each time (those before it stay applied)."""


class RuntimeSignaturesChanged(MigrationRefused):
    """A run would have changed the argument list or result type of a function
    running runtimes call (provider/deploy/live_signatures.py); it rolled back."""


class UndeclaredTableLocks(MigrationRefused):
    """A revision took a strong lock on a table it does not declare; the run
    rolled back."""


class SessionNotPinned(MigrationRefused):
    """The run's transactions would not all reach one server session (a
    transaction pooler): refused, with nothing left behind."""


class MigrationMisused(Exception):
    """The run could not begin with what it was given (an unknown revision,
    say): nothing changed."""
