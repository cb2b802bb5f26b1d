-- The runtime DDL guard of a database: which runtime roles it refuses DDL to.
--
-- Guarantee: only the role that installed the guard (a superuser, or a
-- managed service's admin that may create event triggers) can change this
-- list. It lives in a schema of that role's, never in a hub's schema: a
-- hub's owner may rewrite anything in its own schema, and a privileged step
-- executes nothing that owner controls (docs/security.md). The privileged
-- steps check, in the same transaction and before they write a row here,
-- that the schema and its objects belong to a role they trust (the session's
-- login or a superuser): provider/deploy/ddl_guard.py.
--
-- Everyone may read it: the guard's function runs as whoever runs DDL, and
-- a hub's owner asks it before it grants a guarded role CREATE.
CREATE SCHEMA IF NOT EXISTS taskhub_guard;
GRANT USAGE ON SCHEMA taskhub_guard TO PUBLIC;

CREATE TABLE IF NOT EXISTS taskhub_guard.guarded_roles (
    -- The hub (its schema) whose runtime role this is: a role guarded for
    -- one hub is refused DDL everywhere in the database.
    hub_schema          pg_catalog.name NOT NULL,
    role_name           pg_catalog.name NOT NULL,
    -- Whether the role held CREATE on the database before the guard's step
    -- gave it: a revoke takes back only what a step gave.
    had_database_create boolean     NOT NULL,
    guarded_at          pg_catalog.timestamptz NOT NULL,
    PRIMARY KEY (hub_schema, role_name)
);
GRANT SELECT ON taskhub_guard.guarded_roles TO PUBLIC;
