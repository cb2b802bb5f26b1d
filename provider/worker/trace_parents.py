"""The trace each activity continues (provider/tracing.py): the context
stored with its instance, read once per instance and kept for a while.

Only while an OpenTelemetry SDK records spans: without one, a worker never
makes the call. An instance's context is written before its first activity
exists and never changes, so a context found is kept (least recently used
first out); "none" is kept briefly only, as a raise_event may still record
one for an instance started without a trace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from provider.errors import TaskHubError
from provider.logs import fields
from provider.tracing import TraceContext

log = logging.getLogger(__name__)

CAPACITY = 4096
NONE_KEPT_S = 10.0


class TraceParents:
    def __init__(
        self,
        schema: str,
        capacity: int = CAPACITY,
        none_kept_s: float = NONE_KEPT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._schema = schema
        self._capacity = capacity
        self._none_kept_s = none_kept_s
        self._clock = clock
        # instance -> (its context or None, when it was read); the threaded
        # worker's slots share it, hence the lock.
        self._lock = threading.Lock()
        self._known: OrderedDict[str, tuple[TraceContext | None, float]] = OrderedDict()

    def known(self, instance_id: str) -> tuple[bool, TraceContext | None]:
        """(True, the instance's context or None) when kept, else (False, None)."""
        with self._lock:
            entry = self._known.get(instance_id)
            if entry is None:
                return False, None
            context, read_at = entry
            if context is None and self._clock() - read_at > self._none_kept_s:
                del self._known[instance_id]
                return False, None
            self._known.move_to_end(instance_id)
            return True, context

    def remember(self, instance_id: str, context: TraceContext | None) -> None:
        with self._lock:
            self._known[instance_id] = (context, self._clock())
            self._known.move_to_end(instance_id)
            while len(self._known) > self._capacity:
                self._known.popitem(last=False)

    def read_failed(self, instance_id: str, error: TaskHubError) -> None:
        """A failed read costs the activity its parent trace, never its run."""
        log.debug(
            "trace context of %s not read: %s",
            instance_id,
            error,
            extra=fields(
                "worker.trace_context_unread", schema=self._schema, instance_id=instance_id
            ),
        )
