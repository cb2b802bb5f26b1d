-- Every function and view of the schema as the last migration run left it:
-- a digest of its definition, and apart from it the attributes a deploy gate
-- names when they drift (SECURITY DEFINER, the SET clauses such as the pinned
-- search_path). Written by taskhub_record_definitions() at the end of each
-- migration run that applied a revision; `taskhub-pg check` compares it with
-- the live catalogue (taskhub_check_drift()).
CREATE TABLE __SCHEMA__.taskhub_definitions (
    object           text        PRIMARY KEY,  -- 'function name(args)' or 'view name'
    kind             text        NOT NULL CHECK (kind IN ('function', 'view')),
    name             text        NOT NULL,
    digest           text        NOT NULL,
    security_definer boolean,
    settings         text[],
    revision         text,
    recorded_at      timestamptz NOT NULL DEFAULT now()
);
