"""The statements a migration run wraps its revisions in, for one schema:
the preamble of its first transaction and the grants, records and clean-up
of its last (provider/deploy/runner.py says when each runs)."""

from __future__ import annotations

from dataclasses import dataclass

from provider.deploy import citus_statements, runtime_role, turn_form
from provider.deploy.migration_options import MigrationOptions
from provider.deploy.sql_files import read_sql, render_text
from provider.deploy.version_table import VERSION_TABLE
from provider.schema_name import quote_schema

# Checked before any revision (each upgrade revision commits on its own), with
# the words taskhub_distribute_on_citus uses.
PRECHECK_CITUS = """
DO $citus$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
        RAISE EXCEPTION 'citus=schema needs the Citus extension in this database'
            USING ERRCODE = '0A000',
                  HINT = 'CREATE EXTENSION citus on the coordinator, add its workers, and run '
                         'the migration there; or migrate without citus=schema';
    END IF;
END
$citus$
"""


def _clean_up_at_base(schema: str) -> str:
    """At base the version table is empty: remove it, and the schema if
    nothing else is in it."""
    quoted = quote_schema(schema)
    return f"""
DO $cleanup$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM {quoted}.{VERSION_TABLE}) THEN
        DROP TABLE {quoted}.{VERSION_TABLE};
        -- Only an empty schema goes. CASCADE reaches no object here (none
        -- depends on the schema); on a Citus cluster it also takes the
        -- sequences Citus left on the workers.
        IF '{schema}' <> 'public' AND NOT EXISTS (
               SELECT 1 FROM pg_depend
                WHERE refclassid = 'pg_namespace'::regclass
                  AND refobjid = '{quoted}'::regnamespace) THEN
            DROP SCHEMA {quoted} CASCADE;
        END IF;
    END IF;
END
$cleanup$
"""


def _record_definitions(schema: str) -> str:
    """From revision 0012: what this run leaves, for the drift check to
    compare with (`taskhub-pg check`)."""
    quoted = quote_schema(schema)
    return f"""
DO $record$
BEGIN
    IF to_regproc('{quoted}.taskhub_record_definitions') IS NOT NULL THEN
        PERFORM {quoted}.taskhub_record_definitions();
    END IF;
END
$record$
"""


def _refuse_privileged(schema: str) -> str:
    """A script's refusal of a session that can do more than the hub's owner
    (sql/privileged/standing.sql says who is), before anything changes."""
    standing = render_text(read_sql("privileged/standing.sql"), schema)
    return f"""
DO $refuse_privileged$
DECLARE
    v_who record;
BEGIN
    SELECT s.login, s.owner, s.privileged INTO v_who FROM (
{standing}
    ) AS s;
    IF v_who.privileged THEN
        RAISE EXCEPTION 'refused: a migration runs the hub''s own code, and this '
                        'session (%) can do more than %, the owner of the hub in schema %, '
                        'who may change that code: run it as %', v_who.login, v_who.owner,
                        {_literal(schema)}, v_who.owner
              USING ERRCODE = '42501';
    END IF;
END
$refuse_privileged$
"""


def _literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class RunStatements:
    """Every statement of a run's own, rendered once for its schema and options."""

    # A session lock: a run spans several transactions, and its connection
    # ends with it (a --sql script's psql session likewise).
    migration_lock: str
    create_schema: str
    clean_up_at_base: str
    # Whether this run creates the hub (revision 0017 reads it): decided
    # where the run happens, a --sql script too.
    new_hub_mark: str
    # From revision 0014: `-x citus=schema` distributes the hub on a Citus
    # cluster; after a run that applied revisions to a hub already
    # distributed, the same call puts back what the replaced functions' SET
    # clauses undid.
    distribute_on_citus: str
    redistribute_if_distributed: str
    record_definitions: str
    # A session that can do more than the hub's owner migrates nothing
    # (provider/deploy/privileged_session.py): online the run asks before it
    # begins; a --sql script asks where it runs, first.
    refuse_privileged: str
    # The check made before any revision and the grant made after them, of
    # the runtime_role option (None without one); else the refresh of the
    # roles granted before, after a run that applied revisions.
    precheck_runtime_role: str | None
    grant_runtime_role: str | None
    refresh_runtime_roles: str

    @classmethod
    def of(cls, options: MigrationOptions, online: bool = True) -> RunStatements:
        schema, quoted = options.schema, quote_schema(options.schema)
        role, mode = options.runtime_role, options.runtime_ddl
        return cls(
            migration_lock=(
                f"SELECT pg_advisory_lock(hashtextextended('taskhub:{schema}:migrations', 0))"
            ),
            create_schema=f"CREATE SCHEMA IF NOT EXISTS {quoted}",
            clean_up_at_base=_clean_up_at_base(schema),
            new_hub_mark=turn_form.new_hub_mark(schema),
            distribute_on_citus=f"SELECT {quoted}.taskhub_distribute_on_citus()",
            redistribute_if_distributed=citus_statements.on_a_distributed_hub(
                schema, "taskhub_distribute_on_citus"
            ),
            record_definitions=_record_definitions(schema),
            refuse_privileged=_refuse_privileged(schema),
            # Online, a run whose role may create an event trigger puts the
            # runtime role in the database's DDL guard itself; a script
            # needs the guard to name it already.
            precheck_runtime_role=(
                runtime_role.precheck_statement(schema, role, mode, may_install_guard=online)
                if role
                else None
            ),
            grant_runtime_role=runtime_role.grant_statement(schema, role, mode) if role else None,
            refresh_runtime_roles=runtime_role.refresh_statement(schema),
        )
