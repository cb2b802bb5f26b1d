-- taskhub-pg 0001: adopting a schema that duroxide created, and replacing
-- functions so that a downgrade can give the previous ones back.
--
-- A task hub created by the duroxide runtime already has the tables (with
-- data) and duroxide's own procedures. Migrating it keeps every row: tables
-- are only created where missing, and each procedure we replace is first
-- "set aside": its definition, as the database itself reports it, is saved
-- in taskhub_set_aside_functions and the function is dropped. Downgrading
-- drops our procedures and re-creates the ones set aside, so the schema is
-- again the one duroxide created.

-- Present only in a schema that existed before taskhub-pg migrated it.
DO $adopt$
BEGIN
    IF to_regclass('__SCHEMA__.instances') IS NOT NULL THEN
        CREATE TABLE __SCHEMA__.taskhub_adopted (
            adopted_at timestamptz NOT NULL DEFAULT now(),
            note       text        NOT NULL
        );
        INSERT INTO __SCHEMA__.taskhub_adopted (note)
        VALUES ('tables existed before taskhub-pg 0001: they are kept on downgrade');
    END IF;
END
$adopt$;

CREATE TABLE __SCHEMA__.taskhub_set_aside_functions (
    function_name text        NOT NULL,
    identity_args text        NOT NULL,
    definition    text        NOT NULL,
    set_aside_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (function_name, identity_args)
);

