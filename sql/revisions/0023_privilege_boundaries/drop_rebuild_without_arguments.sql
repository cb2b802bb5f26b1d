-- taskhub_rebuild_runtime_ddl_guard takes the role to add or take out now
-- (both default to none, so a call without arguments still works): the old
-- form goes first, or a call without arguments would find two.
DROP FUNCTION IF EXISTS __SCHEMA__.taskhub_rebuild_runtime_ddl_guard();
