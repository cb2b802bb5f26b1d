-- Functions are executable by PUBLIC by default; in the public schema that
-- would be every role of the database. Only granted roles may call them.
-- (A per-schema ALTER DEFAULT PRIVILEGES cannot take this default away, so
-- taskhub_refresh_runtime_roles repeats it after every migration run.)
SELECT __SCHEMA__.taskhub_revoke_public_execute();
