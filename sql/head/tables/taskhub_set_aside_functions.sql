-- Functions a revision replaced in an adopted schema (duroxide's own), saved
-- so that a downgrade can re-create them (see adoption/).
CREATE TABLE __SCHEMA__.taskhub_set_aside_functions (
    function_name text        NOT NULL,
    identity_args text        NOT NULL,
    definition    text        NOT NULL,
    set_aside_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (function_name, identity_args)
);
