-- taskhub-pg 0023, downgrade: the check of 0016 (after the SELECT rows are gone).
ALTER TABLE __SCHEMA__.taskhub_operator_privileges
    DROP CONSTRAINT taskhub_operator_privileges_privilege_check,
    ADD CONSTRAINT taskhub_operator_privileges_privilege_check
        CHECK (privilege IN ('EXECUTE', 'UPDATE', 'DELETE'));
