"""Chaos suite: the real duroxide 0.2.2 runtime, in several worker processes,
runs a deterministic workload on our schema and on a duroxide 0.2.2 schema at
the same time while backends are terminated, the server restarts in immediate
mode, worker processes are SIGKILLed and table locks make the runtime's
statements time out. Then every orchestration, history and queue is checked.

    python -m drills.chaos --orchestrations 1000 --seconds 240

`runner.run_chaos` is the one entry point; tests/faults/test_chaos.py and
`__main__` both call it.
"""
