"""What the tests, the demo and the benchmarks share: the schema flavours a
run can compare (ours, duroxide 0.2.2, earlier revisions), the contended
workload, and latency bookkeeping. Each of them imports it from here."""
