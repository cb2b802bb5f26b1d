"""The worker layer: the activity worker, the lease keeper and cancellation.
It issues no SQL itself; it calls the client."""
