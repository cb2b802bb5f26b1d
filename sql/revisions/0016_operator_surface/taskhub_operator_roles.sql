-- The roles taskhub_grant_operator_role made operators of this hub: they may
-- run the runbook (docs/ops.md) and nothing more. Every migration run
-- re-grants them (taskhub_refresh_runtime_roles), so objects of later
-- revisions are covered.
CREATE TABLE __SCHEMA__.taskhub_operator_roles (
    role_name  text        PRIMARY KEY,
    granted_at timestamptz NOT NULL DEFAULT now()
);
