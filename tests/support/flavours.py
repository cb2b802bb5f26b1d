"""The schemas a test can run against (devkit.workloads.flavours, shared with the bench)."""

from devkit.workloads.flavours import (
    ALL,
    DUROXIDE_0_2_2,
    TASKHUB,
    TASKHUB_CALLER_CLOCK,
    TASKHUB_JSONB,
    TASKHUB_TEXT_HISTORY,
    Flavour,
)

__all__ = [
    "ALL",
    "DUROXIDE_0_2_2",
    "TASKHUB",
    "TASKHUB_CALLER_CLOCK",
    "TASKHUB_JSONB",
    "TASKHUB_TEXT_HISTORY",
    "Flavour",
]
