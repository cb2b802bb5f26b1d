-- Back to the form without arguments, which the released file puts back.
DROP FUNCTION IF EXISTS __SCHEMA__.taskhub_rebuild_runtime_ddl_guard(text, text);
