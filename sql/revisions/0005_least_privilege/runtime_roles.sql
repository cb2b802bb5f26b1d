-- taskhub-pg 0005: runtime roles.
--
-- `python -m provider upgrade --runtime-role R` (Alembic: `-x runtime_role=R`)
-- calls taskhub_grant_runtime_role('R'). The role gets USAGE on the schema,
-- EXECUTE on the runtime procedures and SELECT on the few tables the duroxide
-- runtime reads with inline SQL (taskhub_runtime_privileges lists them all).
--
-- The duroxide 0.2.2 runtime needs one more thing. Each time it connects, its
-- migration runner issues `CREATE SCHEMA IF NOT EXISTS` (for a schema other
-- than public) and `CREATE TABLE IF NOT EXISTS _duroxide_migrations`, and
-- PostgreSQL checks the CREATE privilege before it checks whether the object
-- exists. So in the default mode, runtime_ddl = 'guarded', the role also gets
-- CREATE on the schema (and on the database, for a schema other than public),
-- and an event trigger refuses every statement of the role that would really
-- create something: the runtime's no-op statements pass, real DDL fails.
-- runtime_ddl = 'none' grants no CREATE at all; the taskhub provider needs
-- none, but then the duroxide 0.2.2 runtime cannot connect.

CREATE TABLE __SCHEMA__.taskhub_runtime_roles (
    role_name           text        PRIMARY KEY,
    runtime_ddl         text        NOT NULL CHECK (runtime_ddl IN ('guarded', 'none')),
    -- Whether the role could already create schemas in this database before
    -- any task hub granted it: then revoking leaves that privilege alone.
    had_database_create boolean     NOT NULL,
    granted_at          timestamptz NOT NULL DEFAULT now()
);

