DROP INDEX IF EXISTS __SCHEMA__.taskhub_instances_created_idx;
