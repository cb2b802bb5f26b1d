"""The client layer: the runtime's operations. `TaskHub` and the call groups
it is made of (orchestration queue, worker queue, instance state,
management), with its connections and wakeups. With `provider.deploy`, the
only code that issues SQL."""
