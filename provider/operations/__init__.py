"""The operator's side of a running hub: the runbook's views and actions
(read by the command line, the dashboard, the metrics and the test kit), the
status, the drift check (`taskhub-pg check` and `repair`), and where a hub
lives on Citus. With `provider.client` and `provider.deploy`, the only code
that issues SQL; it may use the deploy layer, never the other way round."""
