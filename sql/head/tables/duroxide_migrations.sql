-- Columns, types and keys are exactly those of the duroxide 0.2.2 Postgres
-- schema, so that the released runtime works unchanged on them. Indexes are
-- our own (taskhub_* names). Times: *_ms, locked_until, locked_at and
-- last_activity_at are Unix epoch milliseconds; other *_at are timestamptz.
-- The duroxide runtime runs its own migration runner on every connect and
-- applies every version it knows that this ledger lacks. taskhub-pg provides
-- the whole schema, so the ledger records every version duroxide 0.2.2 knows:
-- the runtime then finds nothing to apply and never replaces our functions.
CREATE TABLE __SCHEMA__._duroxide_migrations (
    version    bigint NOT NULL PRIMARY KEY,
    name       text   NOT NULL,
    applied_at timestamptz DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO __SCHEMA__._duroxide_migrations (version, name)
SELECT v, format('%s_provided_by_taskhub_pg', lpad(v::text, 4, '0'))
  FROM unnest(ARRAY[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
                    18, 19, 20, 21, 23, 25]) AS v
ON CONFLICT (version) DO NOTHING;
