"""The client layer: the only code that issues SQL. `TaskHub` and the call
groups it is made of (orchestration queue, worker queue, instance state,
management), and the JSON shapes of the duroxide runtime."""
