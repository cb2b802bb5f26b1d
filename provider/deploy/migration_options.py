"""What a migration run is told, as one validated object.

The three ways in build the same `MigrationOptions`, and provider/deploy/runner.py
reads nothing else:

* Python: `provider.deploy.migrate.upgrade(url, schema, runtime_role=...)`;
* the command line: `taskhub-pg upgrade --schema S --runtime-role R ...`;
* the alembic command line: `alembic -x schema=S -x runtime_role=R upgrade head`.

Each option has one name (the -x spelling; the command line's flag is the
same with dashes), one default and one check, here. Whatever is wrong is
refused before the run connects, naming the option; an -x name that is not
an option is refused too (a typo must not deploy with the default).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

from provider.deploy import runtime_role
from provider.deploy.table_locks import LockPolicy
from provider.masking import url_problem
from provider.schema_name import InvalidSchemaName, validate_schema_name

if TYPE_CHECKING:  # the command line builds options without loading Alembic
    from alembic.config import Config

CITUS_MODES = ("schema",)
Direction = Literal["upgrade", "downgrade"]

# Where a run's options travel from the caller to provider/deploy/runner.py.
ATTRIBUTE = "taskhub_pg_options"


class InvalidMigrationOption(ValueError):
    """An option of a migration run is not acceptable; `option` names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


class InvalidSchemaOption(InvalidMigrationOption, InvalidSchemaName):
    """A bad schema name: an InvalidSchemaName too, as every caller of
    provider.deploy.migrate has caught it."""


@dataclass(frozen=True)
class MigrationOptions:
    schema: str = "public"
    # The database; None offline, or to take DATABASE_URL / alembic.ini's
    # sqlalchemy.url (the alembic command line).
    url: str | None = None
    # Granted what a runtime needs at the end of the run (docs/ops.md).
    runtime_role: str | None = None
    runtime_ddl: str = "guarded"
    # "schema": distribute the hub on the Citus cluster (docs/scale-out.md).
    citus: str | None = None
    locks: LockPolicy = field(default_factory=LockPolicy)
    # Told by provider.deploy.migrate; the alembic command line says it itself.
    direction: Direction | None = None

    @classmethod
    def build(
        cls,
        *,
        schema: str = "public",
        url: str | None = None,
        runtime_role: str | None = None,
        runtime_ddl: str | None = None,
        citus: str | None = None,
        lock_timeout_ms: int | str | None = None,
        lock_attempts: int | str | None = None,
    ) -> MigrationOptions:
        """Validate each option (an empty string is an option not given)."""
        return cls(
            schema=_schema(schema),
            url=url or None,
            runtime_role=_role(runtime_role),
            runtime_ddl=_runtime_ddl(runtime_ddl or "guarded"),
            citus=_citus(citus),
            locks=_locks(lock_timeout_ms, lock_attempts),
        )

    @classmethod
    def from_x_arguments(cls, arguments: Mapping[str, str]) -> MigrationOptions:
        """From the alembic command line's `-x name=value` arguments."""
        unknown = sorted(set(arguments) - set(X_ARGUMENTS))
        if unknown:
            raise InvalidMigrationOption(
                unknown[0],
                f"unknown option -x {unknown[0]}: the options are {', '.join(X_ARGUMENTS)}",
            )
        return cls.build(**arguments)

    def going(self, direction: Direction) -> MigrationOptions:
        return replace(self, direction=direction)

    def database_url(self, *, offline: bool, configured: str | None = None) -> str:
        """The SQLAlchemy URL the run connects with: the url option, else
        DATABASE_URL, else alembic.ini's sqlalchemy.url (`configured`)."""
        url = self.url or os.environ.get("DATABASE_URL") or configured
        if not url:
            if offline:
                return "postgresql+psycopg://"
            raise InvalidMigrationOption(
                "url", "no database URL: set DATABASE_URL or pass -x url=..."
            )
        # A raw @, / or space in the password: SQLAlchemy would misread the
        # URL and quote pieces of it in its error. Refused in words that quote none.
        libpq = url.startswith(("postgresql://", "postgres://"))
        problem = url_problem(url) if libpq else None
        if problem is not None:
            raise InvalidMigrationOption("url", problem)
        # psycopg 3 is the driver; accept plain libpq URLs.
        for prefix in ("postgresql://", "postgres://"):
            if url.startswith(prefix):
                return "postgresql+psycopg://" + url[len(prefix) :]
        return url


# The -x names, in the order the error lists them.
X_ARGUMENTS = (
    "schema",
    "url",
    "runtime_role",
    "runtime_ddl",
    "citus",
    "lock_timeout_ms",
    "lock_attempts",
)


def store(config: Config, options: MigrationOptions) -> None:
    """Hand the options to provider/deploy/runner.py through Alembic's Config."""
    config.attributes[ATTRIBUTE] = options


def of_run(config: Config, x_arguments: Mapping[str, str]) -> MigrationOptions:
    """What provider/deploy/runner.py runs with: the options a caller stored, else
    those of the alembic command line's -x arguments (stored for the
    revisions' steps to read)."""
    stored: MigrationOptions | None = config.attributes.get(ATTRIBUTE)
    if stored is not None:
        if x_arguments:
            raise InvalidMigrationOption(
                next(iter(x_arguments)), "options are given either as -x or from Python, not both"
            )
        return stored
    options = MigrationOptions.from_x_arguments(x_arguments)
    store(config, options)
    return options


def stored(config: Config) -> MigrationOptions:
    """The options of the run under way (a revision's steps read the schema here)."""
    options: MigrationOptions = config.attributes[ATTRIBUTE]
    return options


def _schema(name: str) -> str:
    try:
        return validate_schema_name(name)
    except InvalidSchemaName as error:
        raise InvalidSchemaOption("schema", str(error)) from None


def _role(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return runtime_role.validate_role_name(name)
    except runtime_role.InvalidRuntimeRole as error:
        raise InvalidMigrationOption("runtime_role", str(error)) from None


def _runtime_ddl(mode: str) -> str:
    try:
        return runtime_role.validate_runtime_ddl(mode)
    except runtime_role.InvalidRuntimeRole as error:
        raise InvalidMigrationOption("runtime_ddl", str(error)) from None


def _citus(mode: str | None) -> str | None:
    if mode in (None, ""):
        return None
    if mode not in CITUS_MODES:
        raise InvalidMigrationOption("citus", f"citus={mode}: the one mode is citus=schema")
    return mode


def _locks(timeout_ms: int | str | None, attempts: int | str | None) -> LockPolicy:
    default = LockPolicy()
    return LockPolicy(
        lock_timeout_ms=_positive("lock_timeout_ms", timeout_ms, default.lock_timeout_ms),
        attempts=_positive("lock_attempts", attempts, default.attempts),
    )


def _positive(option: str, value: int | str | None, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number <= 0:
        raise InvalidMigrationOption(option, f"{option}={value!r}: expected a positive integer")
    return number
