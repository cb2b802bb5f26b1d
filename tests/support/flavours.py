"""The schemas a test can run against (defined in bench.schemas, shared with the benchmarks)."""

from bench.schemas import ALL, DUROXIDE_0_2_2, TASKHUB, TASKHUB_CALLER_CLOCK, Flavour

__all__ = ["ALL", "DUROXIDE_0_2_2", "TASKHUB", "TASKHUB_CALLER_CLOCK", "Flavour"]
