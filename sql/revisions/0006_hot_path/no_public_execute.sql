-- taskhub-pg 0006: like every function of the schema, the new ones are not
-- executable by PUBLIC (the procedures run as their owner; see 0005).
SELECT __SCHEMA__.taskhub_revoke_public_execute();
