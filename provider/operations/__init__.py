"""The operator's side of a hub that the runbook's plans do not read
(provider/client/operator_plans.py): the status, the drift check
(`taskhub-pg check` and `repair`), the runtimes a ledger admits, and where a
hub lives on Citus. With `provider.client` and `provider.deploy`, the only
code that issues SQL; it may use the deploy layer, never the other way
round. The status and the drift check run on their caller's connection."""
