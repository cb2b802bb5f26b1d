"""Deploying a hub: the migration runner (provider/deploy/runner.py) and what
it is made of (options, passes, attempts, table locks, the call gate, live
signatures, the run report), the SQL files and their history, runtime and
operator roles, a privileged session's refusals and the database's DDL
guard, and the turn form. The only importer of Alembic and SQLAlchemy; with
`provider.client` and `provider.operations`, the only code that issues SQL."""
