-- Whether p_member can use p_role's privileges (it inherits them) or become
-- p_role (SET ROLE): then the two roles share their rights. A membership
-- that gives neither is not sharing: from PostgreSQL 16 on, a non-superuser
-- with CREATEROLE is an admin-option member of every role it creates, with
-- INHERIT and SET off, and cannot drop that membership (every managed
-- service's console creates roles so). Before 16, a member can always SET.
CREATE OR REPLACE FUNCTION __SCHEMA__.taskhub_shares_rights(p_member name, p_role name)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_has_role(p_member, p_role, 'USAGE')
        OR CASE WHEN current_setting('server_version_num')::integer >= 160000
                THEN pg_has_role(p_member, p_role, 'SET')
                ELSE pg_has_role(p_member, p_role, 'MEMBER')
           END
$$;
REVOKE EXECUTE ON FUNCTION __SCHEMA__.taskhub_shares_rights(name, name) FROM PUBLIC;
