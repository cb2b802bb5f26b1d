"""Workloads to run against a hub and their measures: the schema flavours a
run can compare (ours, duroxide 0.2.2, earlier revisions), the contended
workload, and latency bookkeeping. The tests, the demo and the benchmarks
import them from here."""
