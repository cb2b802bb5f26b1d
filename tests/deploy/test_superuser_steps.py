"""Who runs what on a hub a plain login owns (issues 36 and 54): the owner
migrates, grants and repairs its own hub; a superuser changes only the
database's DDL guard and the CREATE it makes safe, and refuses in one line
what would run the hub's code (provider/deploy/privileged_session.py). The
routes an owner can plant are tests/deploy/test_privileged_steps.py; these
are the steps themselves, their output and what they leave.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from devkit.roles import LoginRole, login_role
from devkit.schema import duroxide_digests
from provider.cli import main
from provider.deploy import ddl_guard, migrate, privileged_session, runtime_role, vouched_duroxide
from provider.deploy.version_table import installed_revision
from provider.testing.embedded_pg import EmbeddedPostgres
from tests.support.db import new_schema_name
from tests.support.flavours import DUROXIDE_0_2_2

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class OwnedHub:
    schema: str
    owner: LoginRole


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
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                guard = admin.execute("SELECT to_regclass('taskhub_guard.guarded_roles')")
                if guard.fetchone() != (None,):
                    admin.execute(
                        "DELETE FROM taskhub_guard.guarded_roles WHERE hub_schema = %s", [schema]
                    )


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


def run(capsys: pytest.CaptureFixture[str], url: str, *argv: str) -> tuple[int, str, str]:
    """taskhub-pg in this process: exit code, stdout and stderr."""
    capsys.readouterr()
    code = main([*argv, "--url", url])
    out = capsys.readouterr()
    return code, out.out.strip(), out.err.strip()


def guarded_for(url: str, schema: str) -> set[str]:
    """The roles the database's guard names for the hub in `schema`."""
    with psycopg.connect(url) as conn:
        if conn.execute("SELECT to_regclass('taskhub_guard.guarded_roles')").fetchone() == (None,):
            return set()
        rows = conn.execute(
            "SELECT role_name FROM taskhub_guard.guarded_roles WHERE hub_schema = %s", [schema]
        ).fetchall()
    return {str(name) for (name,) in rows}


def refused_ddl(url: str, statement: str) -> str | None:
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(statement)
    except psycopg.errors.InsufficientPrivilege as error:
        return str(error)
    return None


def function_owners(url: str, schema: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT proname, proowner::regrole::text FROM pg_proc"
            " WHERE pronamespace = %s::regnamespace",
            [f'"{schema}"'],
        ).fetchall()
    return {str(name): str(owner) for name, owner in rows}


def test_the_superuser_guards_the_role_and_the_owner_grants_the_rest(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/ops.md, "The superuser's steps": two steps, each by whoever may."""
    hub = owned_hub
    # The owner first: refused, in one line naming the step that comes first.
    code, _, err = run(
        capsys, hub.owner.url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 1 and "needs the DDL guard to name role" in err, err

    code, out, err = run(
        capsys, database_url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 0, err
    assert f"the hub's owner {hub.owner.name} grants and records the rest" in out
    assert guarded_for(database_url, hub.schema) == {runtime.name}
    code, out, err = run(
        capsys, hub.owner.url, "grant-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 0, err
    assert "grants and records the rest" not in out

    refusal = refused_ddl(runtime.url, f'CREATE TABLE "{hub.schema}".runtime_ddl ()')
    assert refusal is not None and "may not run DDL" in refusal
    # The hub is the owner's, whole; its next migration needs no superuser.
    assert set(function_owners(database_url, hub.schema).values()) == {hub.owner.name}
    migrate.upgrade(hub.owner.url, hub.schema)
    assert main(["check", "--url", hub.owner.url, "--schema", hub.schema]) == 0

    code, out, err = run(
        capsys, database_url, "revoke-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 0, err
    assert guarded_for(database_url, hub.schema) == set()
    assert refused_ddl(runtime.url, "CREATE TEMP TABLE runtime_ddl ()") is None
    code, _, err = run(
        capsys, hub.owner.url, "revoke-runtime-role", runtime.name, "--schema", hub.schema
    )
    assert code == 0, err
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT has_schema_privilege(%s, %s, 'USAGE'), has_schema_privilege(%s, %s, 'CREATE')",
            [runtime.name, hub.schema, runtime.name, hub.schema],
        ).fetchone()
    assert row == (False, False)


def test_the_hubs_own_role_functions_refuse_a_superuser_in_psql(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole
) -> None:
    """The psql route the runbook gave before 0.3: a courtesy refusal (the
    owner could rewrite it; docs/security.md says so)."""
    for call in (
        f"taskhub_grant_runtime_role('{runtime.name}', 'none')",
        f"taskhub_revoke_runtime_role('{runtime.name}')",
        f"taskhub_grant_operator_role('{runtime.name}')",
        "taskhub_refresh_runtime_roles()",
    ):
        with (
            psycopg.connect(database_url, autocommit=True) as conn,
            pytest.raises(psycopg.errors.InsufficientPrivilege, match="can do more than"),
        ):
            conn.execute(f'SELECT "{owned_hub.schema}".{call}')


def test_a_guard_body_the_owner_planted_is_never_the_guards(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole
) -> None:
    """The guard's function is the package's text, in a schema the superuser
    owns: the owner's function of the same name in its hub is never it."""
    hub, owner = owned_hub, owned_hub.owner.name
    as_owner(
        hub,
        f'CREATE OR REPLACE FUNCTION "{hub.schema}".taskhub_refuse_runtime_ddl()'
        " RETURNS event_trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp"
        f" AS {escalating_body(owner, '')}",
    )
    runtime_role.grant(database_url, hub.schema, runtime.name)
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute(f'CREATE TABLE "{hub.schema}".superuser_ddl ()')  # fires the guard
        row = admin.execute(
            "SELECT e.evtfoid::regprocedure::text, pg_get_userbyid(e.evtowner),"
            "       pg_get_userbyid(p.proowner)"
            "  FROM pg_event_trigger AS e JOIN pg_proc AS p ON p.oid = e.evtfoid"
            " WHERE e.evtname = %s",
            [ddl_guard.EVENT_TRIGGER],
        ).fetchone()
    assert row is not None and row[0] == ddl_guard.FUNCTION
    assert row[1] == row[2] != owner
    assert not is_superuser(database_url, owner)


def test_roles_the_owner_wrote_into_its_record_and_its_comment_are_not_guarded(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole
) -> None:
    """The guard's list is its own: a row or a comment the owner planted would
    lock that role out of DDL."""
    hub = owned_hub
    with login_role(database_url, prefix="bystander") as bystander:
        as_owner(
            hub,
            f'INSERT INTO "{hub.schema}".taskhub_runtime_roles'
            f" (role_name, runtime_ddl, had_database_create) VALUES ('{bystander.name}',"
            " 'guarded', true)",
            f'COMMENT ON FUNCTION "{hub.schema}".taskhub_refuse_runtime_ddl()'
            f" IS 'taskhub.guarded_roles={{{bystander.name}}}'",
        )
        runtime_role.grant(database_url, hub.schema, runtime.name)
        assert guarded_for(database_url, hub.schema) == {runtime.name}
        assert refused_ddl(bystander.url, "CREATE TEMP TABLE bystander_ddl ()") is None
        assert refused_ddl(runtime.url, "CREATE TEMP TABLE runtime_ddl ()") is not None
        runtime_role.revoke(database_url, hub.schema, runtime.name)


def test_a_guard_schema_a_lesser_role_made_stops_the_guards_step_and_guards_nothing(
    database_url: str, owned_hub: OwnedHub, runtime: LoginRole, capsys: pytest.CaptureFixture[str]
) -> None:
    """A schema named taskhub_guard that the owner made first: the superuser
    writes nothing there, and the owner's grant does not take it for a guard."""
    hub = owned_hub
    with psycopg.connect(database_url) as conn:
        if conn.execute("SELECT to_regnamespace('taskhub_guard')").fetchone() != (None,):
            pytest.skip("another test of this database installed the guard already")
    as_owner(hub, "CREATE SCHEMA taskhub_guard")
    try:
        code, _, err = run(
            capsys, database_url, "grant-runtime-role", runtime.name, "--schema", hub.schema
        )
        assert code == 1
        assert f"schema taskhub_guard belongs to role {hub.owner.name}" in err
        assert len(err.splitlines()) == 1
        as_owner(
            hub,
            "CREATE TABLE taskhub_guard.guarded_roles (hub_schema name, role_name name,"
            " had_database_create boolean, guarded_at timestamptz)",
            f"INSERT INTO taskhub_guard.guarded_roles VALUES ('{hub.schema}', '{runtime.name}',"
            " true, now())",
        )
        code, _, err = run(
            capsys, hub.owner.url, "grant-runtime-role", runtime.name, "--schema", hub.schema
        )
        assert code == 1 and "needs the DDL guard to name role" in err
    finally:
        as_owner(hub, "DROP SCHEMA taskhub_guard CASCADE")


def test_a_superusers_upgrade_and_downgrade_of_an_owners_hub_are_refused_in_one_line(
    database_url: str, owned_hub: OwnedHub, capsys: pytest.CaptureFixture[str]
) -> None:
    hub = owned_hub
    for argv in (
        ("upgrade", "--schema", hub.schema),
        ("downgrade", "--revision", "0020", "--yes", "--schema", hub.schema),
        ("repair", "--schema", hub.schema),
        ("turn-form", "jsonb", "--force", "--schema", hub.schema),
        ("grant-operator-role", hub.owner.name, "--schema", hub.schema),
    ):
        code, _, err = run(capsys, database_url, *argv)
        assert code == 1, (argv, err)
        assert len(err.splitlines()) == 1, err
        assert "can do more than" in err and f"connect as {hub.owner.name}" in err, err
    with pytest.raises(privileged_session.PrivilegedSessionRefused, match="connect as"):
        migrate.upgrade(database_url, hub.schema)
    with psycopg.connect(database_url) as conn:
        assert installed_revision(conn, hub.schema) == migrate.head_revision()


def test_set_role_to_the_owner_is_no_way_around(database_url: str, owned_hub: OwnedHub) -> None:
    """The session's login counts: code after SET ROLE may RESET ROLE; and a
    privileged session acting as another role is refused whole."""
    hub = owned_hub
    with psycopg.connect(database_url, autocommit=True) as conn:
        for statement in (
            f"SET ROLE {hub.owner.name}",
            f"SET SESSION AUTHORIZATION {hub.owner.name}",
        ):
            conn.execute(statement)
            found = privileged_session.standing(conn, hub.schema)
            assert (found.privileged, found.owner, found.acting_as) == (
                True,
                hub.owner.name,
                hub.owner.name,
            )
            with pytest.raises(privileged_session.PrivilegedSessionRefused, match="acts as"):
                privileged_session.require_clean(found)
    with psycopg.connect(hub.owner.url) as conn:
        assert not privileged_session.standing(conn, hub.schema).privileged


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
            assert privileged_session.standing(conn, hub.schema).privileged
        with psycopg.connect(operator.url) as conn:
            assert not privileged_session.standing(conn, hub.schema).privileged
        assert main(["check", "--url", operator.url, "--schema", hub.schema]) == 0
        runtime_role.revoke_operator(hub.owner.url, hub.schema, operator.name)


def test_check_names_a_change_the_owner_re_blessed(
    database_url: str, owned_hub: OwnedHub, capsys: pytest.CaptureFixture[str]
) -> None:
    """taskhub_record_definitions() blesses what it finds; the package's own
    bodies do not change, so `check` still names the change: as the owner,
    and as a superuser, who reads the catalogue alone."""
    hub = owned_hub
    as_owner(
        hub,
        f'CREATE OR REPLACE FUNCTION "{hub.schema}".taskhub_runtime_ddl_guard_name()'
        " RETURNS text LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp"
        " AS $$ SELECT 'taskhub_ddl_guard_elsewhere' $$",
        f'SELECT "{hub.schema}".taskhub_record_definitions()',
    )
    for url in (hub.owner.url, database_url):
        code, out, err = run(capsys, url, "check", "--schema", hub.schema)
        assert code == 1, err
        assert "unpackaged" in out and "taskhub_runtime_ddl_guard_name" in out
    code, out, err = run(capsys, database_url, "check", "--schema", hub.schema)
    assert "read the catalogue alone" in err


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
    code, _, err = run(capsys, database_url, *verb, "--schema", owned_hub.schema)
    assert code == 1, err
    assert len(err.splitlines()) == 1
    assert f"can do more than {owned_hub.owner.name}" in err


def test_the_vouched_digests_are_those_of_the_installed_duroxide(database_url: str) -> None:
    """provider/deploy/vouched_duroxide.py is what duroxide 0.2.2 creates
    (rewrite it with `python -m devkit.schema.duroxide_digests URL`)."""
    bodies, definitions = duroxide_digests.duroxide_schema_digests(database_url)
    assert set(bodies) == vouched_duroxide.BODIES
    assert set(definitions) == vouched_duroxide.DEFINITIONS


def test_the_owners_downgrade_gives_its_adopted_schema_back_to_duroxide(
    database_url: str,
) -> None:
    with login_role(database_url, prefix="owner") as owner:
        with psycopg.connect(database_url, autocommit=True) as admin:
            database = admin.execute("SELECT current_database()").fetchone()
            assert database is not None
            admin.execute(f'GRANT CREATE ON DATABASE "{database[0]}" TO {owner.name}')
        schema = DUROXIDE_0_2_2.create_schema(owner.url, new_schema_name("dxo"))
        try:
            made = function_owners(database_url, schema)
            migrate.upgrade(owner.url, schema)
            migrate.downgrade(owner.url, schema, "base")
            assert function_owners(database_url, schema) == made
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_hubs_own_guard_of_0028_is_moved_into_the_databases(
    database_url: str, runtime: LoginRole, capsys: pytest.CaptureFixture[str]
) -> None:
    """Revisions 0005-0028 kept a guard per hub, in the hub's schema. After
    the owner's upgrade it still guards; the superuser's next guard step
    moves its roles into the database's guard and drops its trigger."""
    with login_role(database_url, prefix="owner") as owner:
        with psycopg.connect(database_url, autocommit=True) as admin:
            database = admin.execute("SELECT current_database()").fetchone()
            assert database is not None
            admin.execute(f'GRANT CREATE ON DATABASE "{database[0]}" TO {owner.name}')
        schema = new_schema_name("old")
        migrate.upgrade(owner.url, schema, "0028", runtime_role=runtime.name, runtime_ddl="none")
        hub = OwnedHub(schema, owner)
        try:
            with psycopg.connect(database_url, autocommit=True) as admin:  # the 0.2 runbook
                admin.execute(
                    f"SELECT \"{schema}\".taskhub_grant_runtime_role('{runtime.name}', 'guarded')"
                )
                legacy = admin.execute(
                    f'SELECT "{schema}".taskhub_runtime_ddl_guard_name()'
                ).fetchone()
            assert legacy is not None
            migrate.upgrade(owner.url, schema)
            assert refused_ddl(runtime.url, "CREATE TEMP TABLE runtime_ddl ()") is not None
            assert main(["check", "--url", owner.url, "--schema", schema]) == 0

            code, _, err = run(
                capsys, database_url, "grant-runtime-role", runtime.name, "--schema", schema
            )
            assert code == 0, err
            assert guarded_for(database_url, schema) == {runtime.name}
            with psycopg.connect(database_url) as conn:
                left = conn.execute(
                    "SELECT count(*) FROM pg_event_trigger WHERE evtname = %s", [legacy[0]]
                ).fetchone()
            assert left == (0,)
            assert set(function_owners(database_url, schema).values()) == {owner.name}
            assert refused_ddl(runtime.url, "CREATE TEMP TABLE runtime_ddl ()") is not None
            assert main(["check", "--url", owner.url, "--schema", schema]) == 0
            runtime_role.revoke(database_url, schema, runtime.name)
            runtime_role.revoke(owner.url, schema, runtime.name)
        finally:
            with psycopg.connect(database_url, autocommit=True) as admin:
                admin.execute(f'DROP SCHEMA IF EXISTS "{hub.schema}" CASCADE')


# -- what the privileged steps send -----------------------------------------


_HUB_CALL = r'(?<![\w"])"?{schema}"?\.(\w+)\s*\('
_HUB_WRITE = r'\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?{schema}"?\.'
_DDL_ON = re.compile(r"^\s*(ALTER|COMMENT\s+ON|DROP|GRANT|REVOKE)\b", re.I)


def statements_of(log: str, application: str) -> list[str]:
    """The statements a session of `application` sent, as log_statement = all
    logged them (log_line_prefix with %a), continuation lines joined."""
    found: list[str] = []
    current: list[str] | None = None
    for line in log.splitlines():
        if line.startswith(("\t", " ")) and current is not None:
            current.append(line)
            continue
        if current is not None:
            found.append("\n".join(current))
            current = None
        marker = re.search(
            rf"\[{re.escape(application)}\] LOG:  (?:statement|execute [^:]*): (.*)", line
        )
        if marker:
            current = [marker.group(1)]
    if current is not None:
        found.append("\n".join(current))
    return found


def test_the_documented_privileged_steps_call_nothing_and_write_nothing_of_the_hub(
    server_url: str,
    database_url: str,
    embedded_cluster: EmbeddedPostgres | None,
    owned_hub: OwnedHub,
    runtime: LoginRole,
) -> None:
    """With log_statement = all: no call of a function in the hub's schema,
    and no INSERT, UPDATE or DELETE on a table in it, from the superuser's
    grant-runtime-role, check and revoke-runtime-role."""
    if embedded_cluster is None:
        pytest.skip("reads the server's log: needs a server this run started")
    application = "privileged-steps-under-log"
    url = f"{database_url}&application_name={application}"
    settings = {"log_statement": "'all'", "log_line_prefix": "'%m [%p] [%a] '"}
    log_file = Path(embedded_cluster.log_file)
    with psycopg.connect(server_url, autocommit=True) as admin:
        for name, value in settings.items():
            admin.execute(f"ALTER SYSTEM SET {name} = {value}")
        admin.execute("SELECT pg_reload_conf()")
    start = log_file.stat().st_size
    try:
        runtime_role.grant(url, owned_hub.schema, runtime.name)
        assert main(["check", "--url", url, "--schema", owned_hub.schema]) in (0, 1)
        runtime_role.revoke(url, owned_hub.schema, runtime.name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            for name in settings:
                admin.execute(f"ALTER SYSTEM RESET {name}")
            admin.execute("SELECT pg_reload_conf()")
    with log_file.open(encoding="utf-8", errors="replace") as log:
        log.seek(start)
        sent = statements_of(log.read(), application)
    assert len(sent) > 10, sent
    schema = re.escape(owned_hub.schema)
    calls = [
        statement
        for statement in sent
        if not _DDL_ON.match(statement) and re.search(_HUB_CALL.format(schema=schema), statement)
    ]
    writes = [s for s in sent if re.search(_HUB_WRITE.format(schema=schema), s, re.I)]
    assert (calls, writes) == ([], [])
