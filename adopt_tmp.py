"""How long adopting a duroxide 0.2.2 schema holds its tables, by the size of its instances."""
import sys, time, psycopg, duroxide
from provider.deploy import migrate
U = sys.argv[1]
for n in (0, 100_000, 1_000_000):
    s = f"adopt_{n}"
    with psycopg.connect(U, autocommit=True) as c:
        c.execute(f"drop schema if exists {s} cascade")
    duroxide.PostgresProvider.connect_with_schema(U, s)
    with psycopg.connect(U, autocommit=True) as c:
        cols = c.execute(f"select column_name, data_type, is_nullable from information_schema.columns where table_schema='{s}' and table_name='instances' order by ordinal_position").fetchall()
        if n:
            c.execute(f"""insert into {s}.instances (instance_id, orchestration_name, orchestration_version, current_execution_id, created_at, updated_at)
                         select 'i-'||g, 'Orch', '1.0.0', 1, now(), now() from generate_series(1, {n}) g""")
            c.execute(f"analyze {s}.instances")
    run = migrate.upgrade(U, s)
    print(n, "instances: adoption", run.duration_s, "s; longest hold", run.locks_held_ms, "ms")
