-- taskhub-pg 0023: an operator's SELECT is listed by table, like the rest of
-- what it is granted (one statement: Citus forwards a distributed table's DDL).
ALTER TABLE __SCHEMA__.taskhub_operator_privileges
    DROP CONSTRAINT taskhub_operator_privileges_privilege_check,
    ADD CONSTRAINT taskhub_operator_privileges_privilege_check
        CHECK (privilege IN ('EXECUTE', 'SELECT', 'UPDATE', 'DELETE'));
