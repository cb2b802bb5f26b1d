"""What a part of the drill saw: its calls, and every error by class and
message, counted. Numbers in a message (statement names, pids, counts) are
folded into N so that one kind of error is one line."""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

MESSAGE_CHARS = 200
NUMBER = re.compile(r"\d+")


def error_key(error: BaseException) -> str:
    """`Class: message` on one line, numbers folded, cut to MESSAGE_CHARS."""
    message = " ".join(str(error).split())
    return NUMBER.sub("N", f"{type(error).__name__}: {message}")[:MESSAGE_CHARS]


@dataclass
class Tally:
    """Calls made and errors seen by one part; safe to share between threads."""

    calls: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def called(self, count: int = 1) -> None:
        with self._lock:
            self.calls += count

    def failed(self, error: BaseException | str) -> None:
        key = error if isinstance(error, str) else error_key(error)
        with self._lock:
            self.errors[key] += 1

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


class _Collect(logging.Handler):
    def __init__(self, into: Counter[str]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        message = " ".join(record.getMessage().split())
        self.into[NUMBER.sub("N", f"{record.levelname} {record.name}: {message}")[:300]] += 1


@contextmanager
def provider_warnings() -> Iterator[Counter[str]]:
    """The provider's log lines at WARNING or above while the block runs, counted."""
    seen: Counter[str] = Counter()
    handler = _Collect(seen)
    logger = logging.getLogger("provider")
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
