-- The roles taskhub_grant_runtime_role made runtime roles of this hub.
CREATE TABLE __SCHEMA__.taskhub_runtime_roles (
    role_name           text        PRIMARY KEY,
    runtime_ddl         text        NOT NULL CHECK (runtime_ddl IN ('guarded', 'none')),
    -- Whether the role could already create schemas in this database before
    -- any task hub granted it: then revoking leaves that privilege alone.
    had_database_create boolean     NOT NULL,
    granted_at          timestamptz NOT NULL DEFAULT now()
);
