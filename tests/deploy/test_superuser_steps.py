"""Superuser steps run only packaged code (issue 36): a hub's owner, who may
rewrite any object of its hub, cannot make a superuser's grant, revoke or
downgrade run code of its choosing, and so cannot become a superuser.

The owner here is a plain login role that migrated its own hub, as
docs/ops.md has it; the superuser is the tests' admin. Each route the issue
reproduced is planted as the owner, then the superuser takes the step the
runbook gives. The `unfenced` flavour puts the defect back (the step without
the privileged fence, i.e. the hub's own functions called as they are, as
the runbook had it): there the owner does become a superuser, so it is a
strict xfail.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

from devkit.roles import LoginRole, login_role
from devkit.schema import duroxide_digests
from provider.cli import main
from provider.deploy import migrate, privileged_fence, runtime_role, vouched_duroxide
from provider.deploy.version_table import installed_revision
from tests.support.db import new_schema_name
from tests.support.flavours import DUROXIDE_0_2_2

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class OwnedHub:
    schema: str
    owner: LoginRole


@pytest.fixture(
    params=[
        "fenced",
        pytest.param(
            "unfenced",
            marks=pytest.mark.xfail(
                strict=True, reason="without the fence the superuser runs the owner's code"
            ),
        ),
    ]
)
def fence(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "unfenced":
        monkeypatch.setattr(privileged_fence, "fence_statement", lambda schema: "SELECT 1")
    return str(request.param)


@pytest.fixture
def owned_hub(database_url: str) -> Iterator[OwnedHub]:
    """A hub its own (non-superuser) owner migrated."""
    with login_role(database_url, prefix="owner") as owner:
        with psycopg.connect(database_url, autocommit=True) as admin:
            database = admin.execute("SELECT current_database()").fetchone()
            assert database is not None
            admin.execute(f'GRANT CREATE ON DATABASE "{database[0]}" TO {owner.name}')
        schema = new_schema_name("own")
        migrate.upgrade(owner.url, schema)
        try:
            yield OwnedHub(schema, owner)
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                # The guard's function is the superuser's: the schema goes first.
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def runtime(database_url: str) -> Iterator[LoginRole]:
    with login_role(database_url) as role:
        yield role


def is_superuser(url: str, role: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = %s", [role]).fetchone()
    return bool(row and row[0])


def as_owner(hub: OwnedHub, *statements: str) -> None:
    with psycopg.connect(hub.owner.url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def escalating_body(owner: str, returns: str) -> str:
    """A plpgsql body that makes `owner` a superuser when a superuser runs it."""
    return f"""$body$
BEGIN
    IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
        EXECUTE 'ALTER ROLE {owner} SUPERUSER';
    END IF;
    RETURN {returns};
END
$body$"""


def run(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str]:
    """taskhub-pg in this process: exit code and stderr."""
    capsys.readouterr()
    code = main([*argv, "--url", url])
    return code, capsys.readouterr().err.strip()


def guard_name(schema: str) -> str:
    """The runtime DDL guard's event trigger of `schema`'s hub
    (taskhub_runtime_ddl_guard_name)."""
    return "taskhub_ddl_guard_" + hashlib.md5(schema.encode()).hexdigest()[:16]


def event_triggers(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [str(name) for (name,) in conn.execute("SELECT evtname FROM pg_event_trigger")]


def test_a_helper_the_owner_redefined_and_re_blessed_never_runs_in_the_superusers_grant(
    database_url: str,
    owned_hub: OwnedHub,
    runtime: LoginRole,
    fence: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub, owner = owned_hub, owned_hub.owner.name
    as_owner(
        hub,
        f'CREATE OR REPLACE FUNCTION "{hub.schema}".taskhub_runtime_ddl_guard_name()'
        " RETURNS text LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp"
        f" AS {escalating_body(owner, repr('taskhub_ddl_guard_planted'))}",
        f'SELECT "{hub.schema}".taskhub_record_definitions()',
    )
    code, stderr = run(
        capsys, database_url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert not is_superuser(database_url, owner)
    assert code == 1, stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert f"function {hub.schema}.taskhub_runtime_ddl_guard_name()" in stderr
    assert "not what the package ships" in stderr
    assert "taskhub_ddl_guard_planted" not in event_triggers(database_url)


def test_a_guard_body_the_owner_planted_is_never_installed_as_a_superusers_event_trigger(
    database_url: str,
    owned_hub: OwnedHub,
    runtime: LoginRole,
    fence: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub, owner = owned_hub, owned_hub.owner.name
    as_owner(
        hub,
        f'CREATE OR REPLACE FUNCTION "{hub.schema}".taskhub_refuse_runtime_ddl()'
        " RETURNS event_trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp"
        f" AS {escalating_body(owner, '')}",
    )
    code, stderr = run(
        capsys, database_url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    # Any superuser's next DDL in this database would fire the trigger.
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE TABLE "{hub.schema}".superuser_ddl ()')
    assert not is_superuser(database_url, owner)
    assert code == 1, stderr
    assert f"function {hub.schema}.taskhub_refuse_runtime_ddl()" in stderr


def test_a_set_aside_definition_the_owner_planted_is_never_executed_by_a_superusers_downgrade(
    database_url: str,
    owned_hub: OwnedHub,
    fence: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    hub, owner = owned_hub, owned_hub.owner.name
    as_owner(
        hub,
        f'INSERT INTO "{hub.schema}".taskhub_set_aside_functions'
        " (function_name, identity_args, definition)"
        f" VALUES ('fetch_orchestration_item', '', 'ALTER ROLE {owner} SUPERUSER')",
    )
    code, stderr = run(
        capsys, database_url, "downgrade", "--revision", "base", "--yes", "--schema", hub.schema
    )
    assert not is_superuser(database_url, owner)
    assert code == 1, stderr
    assert "set-aside definition of fetch_orchestration_item()" in stderr
    with psycopg.connect(database_url) as conn:  # refused before anything changed
        assert installed_revision(conn, hub.schema) == migrate.head_revision()


@pytest.mark.parametrize(
    ("function", "returns", "to"),
    [
        ("taskhub_revoke_public_execute()", ("void", ""), migrate.head_revision()),
        ("taskhub_restore_functions(p_names text[])", ("integer", "0"), "base"),
    ],
    ids=["revoke_public_execute", "restore_functions"],
)
def test_a_function_the_owner_planted_is_never_called_by_a_superusers_downgrade(
    database_url: str,
    owned_hub: OwnedHub,
    fence: str,
    capsys: pytest.CaptureFixture[str],
    function: str,
    returns: tuple[str, str],
    to: str,
) -> None:
    hub, owner = owned_hub, owned_hub.owner.name
    target = "base" if to == "base" else f"{int(to) - 1:04d}"
    as_owner(
        hub,
        f'CREATE OR REPLACE FUNCTION "{hub.schema}".{function} RETURNS {returns[0]}'
        " LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp"
        f" AS {escalating_body(owner, returns[1])}",
        f'SELECT "{hub.schema}".taskhub_record_definitions()',
    )
    code, stderr = run(
        capsys, database_url, "downgrade", "--revision", target, "--yes", "--schema", hub.schema
    )
    assert not is_superuser(database_url, owner)
    assert code == 1, stderr
    assert f"function {hub.schema}.{function.split('(')[0]}(" in stderr
    assert "not what the package ships" in stderr


def test_check_names_a_change_the_owner_re_blessed(
    database_url: str, owned_hub: OwnedHub, capsys: pytest.CaptureFixture[str]
) -> None:
    """taskhub_record_definitions() blesses what it finds; the package's own
    bodies do not change, so `check` still names the change."""
    hub = owned_hub
    as_owner(
        hub,
        f'CREATE OR REPLACE FUNCTION "{hub.schema}".taskhub_runtime_ddl_guard_name()'
        " RETURNS text LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp"
        " AS $$ SELECT 'taskhub_ddl_guard_elsewhere' $$",
        f'SELECT "{hub.schema}".taskhub_record_definitions()',
    )
    for url in (hub.owner.url, database_url):  # as the owner, and behind the fence
        code, _ = run(capsys, url, "check", "--schema", hub.schema, "--json")
        assert code == 1
    code = main(["check", "--url", hub.owner.url, "--schema", hub.schema])
    assert code == 1
    assert "unpackaged" in capsys.readouterr().out


def test_a_role_the_owner_wrote_into_its_record_is_not_guarded_by_a_superusers_grant(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole
) -> None:
    """The guard's list is its own: a planted row would lock that role out of DDL."""
    hub = owned_hub
    with login_role(database_url, prefix="admin") as bystander:
        as_owner(
            hub,
            f'INSERT INTO "{hub.schema}".taskhub_runtime_roles'
            f" (role_name, runtime_ddl, had_database_create) VALUES ('{bystander.name}',"
            " 'guarded', true)",
        )
        runtime_role.grant(database_url, hub.schema, runtime.name)
        with psycopg.connect(bystander.url, autocommit=True) as conn:
            conn.execute("CREATE TEMP TABLE bystander_ddl ()")  # not refused
        with psycopg.connect(database_url) as conn:
            row = conn.execute(
                "SELECT proconfig FROM pg_proc WHERE oid = %s::regprocedure",
                [f'"{hub.schema}".taskhub_refuse_runtime_ddl()'],
            ).fetchone()
        assert row is not None
        assert f"taskhub.guarded_roles={{{runtime.name}}}" in row[0]
        runtime_role.revoke(database_url, hub.schema, runtime.name)


def test_a_role_the_owner_wrote_into_the_guards_comment_is_not_guarded_by_a_superusers_grant(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole
) -> None:
    """Where a guard made without a superuser keeps its list (the function's
    comment), the owner may write before any guard exists: nobody's list."""
    hub = owned_hub
    with login_role(database_url, prefix="admin") as bystander:
        as_owner(
            hub,
            f'COMMENT ON FUNCTION "{hub.schema}".taskhub_refuse_runtime_ddl()'
            f" IS 'taskhub.guarded_roles={{{bystander.name}}}'",
        )
        runtime_role.grant(database_url, hub.schema, runtime.name)
        with psycopg.connect(bystander.url, autocommit=True) as conn:
            conn.execute("CREATE TEMP TABLE bystander_ddl ()")  # not refused
        with (
            psycopg.connect(runtime.url, autocommit=True) as conn,
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not run DDL"),
        ):
            conn.execute(f'CREATE TABLE "{hub.schema}".runtime_ddl ()')
        runtime_role.revoke(database_url, hub.schema, runtime.name)


def test_the_runbook_verbs_grant_and_revoke_a_guarded_role_and_leave_the_owner_its_hub(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole, capsys: pytest.CaptureFixture[str]
) -> None:
    hub = owned_hub
    code, stderr = run(
        capsys, database_url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 0, stderr
    assert guard_name(hub.schema) in event_triggers(database_url)
    owners = function_owners(database_url, hub.schema)
    assert owners.pop("taskhub_refuse_runtime_ddl") != hub.owner.name  # the superuser's
    assert set(owners.values()) == {hub.owner.name}
    with (
        psycopg.connect(runtime.url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege, match="may not run DDL"),
    ):
        conn.execute(f'CREATE TABLE "{hub.schema}".runtime_ddl ()')
    # The owner's next migration needs no superuser, and nothing drifted.
    migrate.upgrade(hub.owner.url, hub.schema)
    assert main(["check", "--url", hub.owner.url, "--schema", hub.schema]) == 0
    code, stderr = run(
        capsys, database_url, "revoke-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 0, stderr
    assert set(function_owners(database_url, hub.schema).values()) == {hub.owner.name}
    # Its hub's guard is gone (other tests' hubs in this database keep theirs).
    assert guard_name(hub.schema) not in event_triggers(database_url)


def function_owners(url: str, schema: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT proname, proowner::regrole::text FROM pg_proc"
            " WHERE pronamespace = %s::regnamespace",
            [f'"{schema}"'],
        ).fetchall()
    return {str(name): str(owner) for name, owner in rows}


def test_a_superusers_upgrade_and_downgrade_of_a_clean_hub_leave_everything_to_its_owner(
    database_url: str, owned_hub: OwnedHub
) -> None:
    hub = owned_hub
    migrate.downgrade(database_url, hub.schema, "0020")
    migrate.upgrade(database_url, hub.schema)
    assert set(function_owners(database_url, hub.schema).values()) == {hub.owner.name}
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT DISTINCT relowner::regrole::text FROM pg_class"
            " WHERE relnamespace = %s::regnamespace",
            [f'"{hub.schema}"'],
        ).fetchall()
    assert {str(owner) for (owner,) in rows} == {hub.owner.name}
    migrate.downgrade(database_url, hub.schema, "base")
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT to_regnamespace(%s)", [hub.schema]).fetchone() == (None,)


def test_set_role_to_the_owner_is_no_way_around_the_fence(
    database_url: str, owned_hub: OwnedHub
) -> None:
    """The session's login counts: code after SET ROLE may RESET ROLE."""
    hub = owned_hub
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"SET ROLE {hub.owner.name}")
        assert privileged_fence.is_privileged(conn, hub.schema) == hub.owner.name
        conn.execute(f"SET SESSION AUTHORIZATION {hub.owner.name}")
        assert privileged_fence.is_privileged(conn, hub.schema) == hub.owner.name
    with psycopg.connect(hub.owner.url) as conn:
        assert privileged_fence.is_privileged(conn, hub.schema) is None


def test_a_member_of_the_owners_role_is_privileged_and_an_operator_is_not(
    database_url: str, owned_hub: OwnedHub
) -> None:
    """A member has the owner's rights and its own: the owner's code would
    get them. An operator has fewer: the runbook runs the owner's code."""
    hub = owned_hub
    with (
        login_role(database_url, prefix="member") as member,
        login_role(database_url, prefix="operator") as operator,
    ):
        with psycopg.connect(database_url, autocommit=True) as admin:
            admin.execute(f"GRANT {hub.owner.name} TO {member.name}")
        runtime_role.grant_operator(hub.owner.url, hub.schema, operator.name)
        with psycopg.connect(member.url) as conn:
            assert privileged_fence.is_privileged(conn, hub.schema) == hub.owner.name
        with psycopg.connect(operator.url) as conn:
            assert privileged_fence.is_privileged(conn, hub.schema) is None
        assert main(["check", "--url", operator.url, "--schema", hub.schema]) == 0
        runtime_role.revoke_operator(hub.owner.url, hub.schema, operator.name)


def test_a_trigger_the_owner_planted_on_a_table_the_grant_writes_stops_it(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole, capsys: pytest.CaptureFixture[str]
) -> None:
    hub, owner = owned_hub, owned_hub.owner.name
    as_owner(
        hub,
        f'CREATE FUNCTION "{hub.schema}".planted() RETURNS trigger LANGUAGE plpgsql'
        f" AS {escalating_body(owner, 'NEW')}",
        f'CREATE TRIGGER planted BEFORE INSERT ON "{hub.schema}".taskhub_runtime_roles'
        f' FOR EACH ROW EXECUTE FUNCTION "{hub.schema}".planted()',
    )
    code, stderr = run(
        capsys, database_url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert not is_superuser(database_url, owner)
    assert code == 1, stderr
    assert f"table {hub.schema}.taskhub_runtime_roles: trigger planted" in stderr


@pytest.mark.parametrize(
    "verb",
    [
        ("status",),
        ("inspect", "queues"),
        ("inspect", "dead-letters"),
        ("prune", "--completed-before", "30d", "--yes"),
    ],
)
def test_a_runbook_verb_run_by_a_superuser_on_an_owners_hub_refuses_in_one_line(
    database_url: str,
    owned_hub: OwnedHub,
    capsys: pytest.CaptureFixture[str],
    verb: tuple[str, ...],
) -> None:
    """The hub's views and functions are its owner's code: a superuser's
    session would run them with its rights."""
    code, stderr = run(capsys, database_url, *verb, "--schema", owned_hub.schema)
    assert code == 1, stderr
    assert len(stderr.splitlines()) == 1
    assert f"can do more than {owned_hub.owner.name}" in stderr


def test_the_vouched_digests_are_those_of_the_installed_duroxide(database_url: str) -> None:
    """provider/deploy/vouched_duroxide.py is what duroxide 0.2.2 creates
    (rewrite it with `python -m devkit.schema.duroxide_digests URL`)."""
    bodies, definitions = duroxide_digests.duroxide_schema_digests(database_url)
    assert set(bodies) == vouched_duroxide.BODIES
    assert set(definitions) == vouched_duroxide.DEFINITIONS


def test_a_superusers_downgrade_gives_an_owners_adopted_schema_back_to_duroxide(
    database_url: str,
) -> None:
    """Every set-aside definition is duroxide's own: the fence vouches for it."""
    with login_role(database_url, prefix="owner") as owner:
        with psycopg.connect(database_url, autocommit=True) as admin:
            database = admin.execute("SELECT current_database()").fetchone()
            assert database is not None
            admin.execute(f'GRANT CREATE ON DATABASE "{database[0]}" TO {owner.name}')
        schema = DUROXIDE_0_2_2.create_schema(owner.url, new_schema_name("dxo"))
        try:
            made = function_owners(database_url, schema)
            migrate.upgrade(owner.url, schema)
            migrate.downgrade(database_url, schema, "base")
            assert function_owners(database_url, schema) == made
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
