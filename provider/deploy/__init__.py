"""The operator's layer: deploying a hub (the Alembic glue, SQL file
rendering, runtime roles, the revision guard), checking and repairing it
(the deploy gate, the status), and running it (the runbook's views and
actions, read by the command line, the metrics and the test kit). The only
importer of alembic; with `provider.client`, the only code that issues SQL."""
