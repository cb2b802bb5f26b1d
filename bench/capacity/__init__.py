"""`make capacity`: how many orchestrations a second this machine carries
before a latency objective breaks, for the released runtime on a hub and on
duroxide 0.2.2's own schema, side by side (issue 56; docs/benchmarks.md)."""
