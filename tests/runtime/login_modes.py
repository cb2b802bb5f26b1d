"""The ways a runtime logs in to a hub, for the scenario groups of every
released runtime (test_duroxide_runtime.py in the suite's process,
test_released_runtimes.py in a virtualenv of another release)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from devkit.roles import LoginRole, login_role
from provider.deploy import migrate, turn_form
from tests.support.db import new_schema_name

# As the schema's owner (a new hub: its turns come as json); as a
# least-privilege role that `runtime_role=` granted only what a runtime
# needs, behind the DDL guard or with no CREATE at all (the mode every
# managed service allows); or as that role on a hub made before revision
# 0017 (jsonb), switched to json by the gated step.
MODES = ("as_owner", "as_runtime_role", "as_runtime_role_without_ddl", "switched_to_json")


@dataclass(frozen=True)
class RuntimeLogin:
    schema: str
    url: str  # how the runtime logs in


@contextmanager
def hub_for(mode: str, database_url: str, runtime_login: LoginRole) -> Iterator[RuntimeLogin]:
    """A new hub, migrated for `mode`, and the URL its runtime logs in with."""
    schema = new_schema_name("rt")
    if mode == "as_owner":
        migrate.upgrade(database_url, schema)
        yield RuntimeLogin(schema, database_url)
    elif mode == "as_runtime_role":
        migrate.upgrade(database_url, schema, runtime_role=runtime_login.name)
        yield RuntimeLogin(schema, runtime_login.url)
    elif mode == "as_runtime_role_without_ddl":
        # A role of its own: the shared one holds CREATE from the guarded hubs.
        with login_role(database_url, prefix="noddl") as role:
            migrate.upgrade(database_url, schema, runtime_role=role.name, runtime_ddl="none")
            yield RuntimeLogin(schema, role.url)
    elif mode == "switched_to_json":
        migrate.upgrade(database_url, schema, "0016", runtime_role=runtime_login.name)
        migrate.upgrade(database_url, schema)
        assert turn_form.switch(database_url, schema, "json").was == "jsonb"
        yield RuntimeLogin(schema, runtime_login.url)
    else:
        raise ValueError(f"no login mode {mode!r}: {MODES}")
