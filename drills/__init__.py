"""The drills: long-running programs that put a real hub under the faults
users meet (chaos, live deploys, failover, poolers) and under a steady soak,
and judge what they see. Each runs by `make <drill>` and prints its verdicts;
the test suite runs a short round of each. What they do the same way (start
a server, pace the load, judge by verdicts, report and exit) is harness.py."""
