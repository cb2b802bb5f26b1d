"""The web dashboard (`taskhub-pg dashboard`, the `web` extra): the hub's
queues, instances and dead letters in a browser, read through
provider.operations.runbook, the reader the command line and the metrics use."""
