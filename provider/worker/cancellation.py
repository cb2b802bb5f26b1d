"""Cooperative cancellation for work that runs under a lease."""

from __future__ import annotations

import threading
from collections.abc import Callable


class WorkCancelled(Exception):
    """Raised inside work whose lease is gone (or that is being shut down)."""


class CancellationToken:
    """Set once, read by the work: `if token.cancelled: ...` or `token.raise_if_cancelled()`."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    def cancel(self, reason: str) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def add_callback(self, callback: Callable[[], None]) -> None:
        """Call `callback` on cancellation (at once if already cancelled)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def remove_callback(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise WorkCancelled(self.reason or "cancelled")

    def wait(self, timeout_s: float | None = None) -> bool:
        """Sleep up to timeout_s; True as soon as the work is cancelled."""
        return self._event.wait(timeout_s)
