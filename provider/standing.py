"""A session next to a hub: who it logged in as, whether it can do more than a
role that controls the hub (a privileged session), and the one-line
refusals that follow (docs/security.md, "Who runs what").

The query is sql/privileged/standing.sql, written to read the same on any
search_path, so that a session may send it first. The deploy steps
(provider/deploy/privileged_session.py) and the client's connections
(provider/client/session_standing.py) both send it; this leaf only reads its
answer and words the refusals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from provider.resources import sql_dir
from provider.schema_name import quote_schema, validate_schema_name

STANDING_FILE = "privileged/standing.sql"
# A session's first statement where a privileged login may send it: the path
# every later name resolves on, set by a qualified call with literals only.
PIN_SEARCH_PATH = "SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', false)"


def standing_query(schema: str) -> str:
    """The query, for the hub in `schema` (its two tokens substituted)."""
    text = (sql_dir() / STANDING_FILE).read_text(encoding="utf-8")
    return text.replace("__SCHEMA_NAME__", validate_schema_name(schema)).replace(
        "__SCHEMA__", quote_schema(schema)
    )


@dataclass(frozen=True)
class Standing:
    """This session next to the hub in `schema`."""

    schema: str
    login: str
    acting_as: str
    owner: str | None  # for the words of a refusal; None: no such schema
    hub_exists: bool
    may_gain: bool  # a superuser, CREATEROLE, or a member of another role
    privileged: bool
    settings: list[str]  # database and role settings a lesser role may have made
    # The database's owner, where this login can do more than it: it
    # configures every session in the database (None elsewhere).
    database_owner: str | None = None
    # Every role may create in the schema (public, before PostgreSQL 15).
    public_may_create: bool = False

    @classmethod
    def of_row(cls, schema: str, row: tuple[Any, ...]) -> Standing:
        login, acting_as, owner, exists, may_gain, privileged, settings = row[:7]
        database_owner, public_may_create = row[7:9]
        return cls(
            schema,
            str(login),
            str(acting_as),
            None if owner is None else str(owner),
            bool(exists),
            bool(may_gain),
            bool(privileged),
            [str(setting) for setting in settings],
            None if database_owner is None else str(database_owner),
            bool(public_may_create),
        )

    def whose(self) -> str:
        whose = f"{self.owner}, the owner of the hub in schema {self.schema}"
        if self.database_owner is not None and self.database_owner != self.owner:
            whose = f"{whose}, or {self.database_owner}, the owner of the database"
        if self.public_may_create:
            whose = f"{whose}, or any role at all: every role may create in schema {self.schema}"
        return whose

    def remedy(self) -> str:
        """What to do instead: connect as the role that controls the hub, and
        where every role may create in the schema (public before PostgreSQL
        15), first take that back, as PostgreSQL 15 does by default."""
        revoke = (
            f"REVOKE CREATE ON SCHEMA {self.schema} FROM PUBLIC (the default from PostgreSQL 15)"
        )
        instead = self.whom_to_connect_as()
        if instead == self.login:  # the hub is this login's: a lesser role is in it too
            if self.public_may_create:
                return revoke
            return f"connect as the role that owns objects in schema {self.schema}, or drop them"
        connect = f"connect as {instead}"
        return f"{revoke}, or {connect}" if self.public_may_create else connect

    def whom_to_connect_as(self) -> str | None:
        """The role a refused step runs as instead: the hub's owner, unless
        that is this login and the database's owner is what it may not trust."""
        if self.owner == self.login and self.database_owner is not None:
            return self.database_owner
        return self.owner


def unclean(found: Standing) -> str | None:
    """Why a privileged session may not run at all: it acts as another role,
    or a setting applies that a lesser role could have made (None: it may)."""
    if not found.privileged:
        return None
    if found.acting_as != found.login:
        return (
            f"refused: this session logged in as {found.login} but acts as"
            f" {found.acting_as} (a SET ROLE, or a setting of the database or the role):"
            f" a session that can do more than {found.whose()} runs only as itself"
        )
    if found.settings:
        return (
            f"refused: settings apply to this session that this step did not make"
            f" ({'; '.join(found.settings)}): a session that can do more than"
            f" {found.whose()} runs only as it connected; remove them (ALTER DATABASE"
            f" ... RESET, ALTER ROLE ... RESET) or connect as {found.whom_to_connect_as()}"
        )
    return None


def refusal(found: Standing, what: str) -> str | None:
    """Why `what`, which runs the hub's own code, may not run in this session:
    it can do more than a role that controls the hub, or the schema is gone
    (a check of a hub that is not there proves nothing). None: it may."""
    if not found.hub_exists:
        return f"refused: schema {found.schema} does not exist (any more): {what} needs its hub"
    if found.privileged:
        return (
            f"refused: {what} runs the hub's own code, and this session ({found.login})"
            f" can do more than a role that may change that code ({found.whose()}):"
            f" {found.remedy()}"
            ' (docs/security.md, "Who runs what")'
        )
    return None


def untrusted(found: Standing) -> bool:
    """Whether code of the hub's may not run in this session: it can do more
    than a role that controls the hub, or it could be and the hub is not
    there to tell (a schema renamed away while it looks, and back after)."""
    return found.privileged or (found.may_gain and not found.hub_exists)


def client_refusal(found: Standing) -> str | None:
    """Why the hub's client (TaskHub, Client: the hub's functions, with this
    session's rights) may not use this session: it can do more than a role
    that controls the hub, or it could be and the hub is not there to tell
    (None: it may)."""
    if found.may_gain and not found.hub_exists:
        return (
            f"schema {found.schema} does not exist: this session ({found.login}) could do"
            " more than a role that controls a hub there, and uses a hub only once it is"
            " there to look at"
        )
    if found.privileged:
        return (
            f"this session ({found.login}) can do more than a role that may change the"
            f" hub's code in schema {found.schema} ({found.whose()}): the hub's functions"
            " would run that code with its rights; connect as the hub's owner, an operator"
            " role or a runtime role (docs/security.md)"
        )
    return None
