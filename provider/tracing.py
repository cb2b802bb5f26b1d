"""OpenTelemetry traces (the `otel` extra): a span per provider call, and the
W3C trace context that travels with an instance's work.

The library's half of OpenTelemetry: spans go through the API only, and the
application installs the SDK and its exporter. Without opentelemetry-api, or
with it and no SDK, `call_span` returns None after one test and no span is
made (bench/tracing_cost.py measures both against no tracing at all); a
caller's valid context (one an upstream service sent) is still stored.

Each provider call (TaskHub.start_orchestration, fetch_work_item, ...) is a
span named after the operation, with

    taskhub.schema, taskhub.operation, taskhub.instance_id (where there is one),
    taskhub.outcome: ok | empty | lock_lost | retryable | refused

A poll that finds nothing leaves no span: an idle worker polls many times a
second, and its time is in the call metrics. start_orchestration and
raise_event are PRODUCER spans whose context is stored with the instance
(taskhub_trace_contexts); the workers continue it in a CONSUMER span per
activity (`activity_span`), so a handler's spans are in the caller's trace.
The application client's start and start_many are start_orchestration spans
too (SPAN_NAMES). Client.wait_for_completion is one span for the whole wait
(`WaitSpan`): each status read and each wakeup is an event of it, and its
reads make no span of their own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from provider.errors import LockLost, TaskHubError, WaitTimeout

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the otel extra is not installed: tracing is off
    trace = None  # type: ignore[assignment]

TRACER_NAME = "taskhub-pg"
# Operations that poll: a span only when they leased something.
POLLS = frozenset({"fetch_work_item", "fetch_orchestration_item"})
# Spans named for what the operation does: the application client's starts
# are start_orchestration spans, as TaskHub's (taskhub.operation says which).
SPAN_NAMES = {"start": "start_orchestration", "start_many": "start_orchestration"}
# Spans that hand work to the runtime, in the caller's trace (by span name).
PRODUCERS = frozenset({"start_orchestration", "raise_event"})
# The arguments of a procedure that name the instance it works on.
INSTANCE_ARGUMENTS = ("p_instance_id", "p_instance")
# The argument of a procedure that starts many instances (start_many).
INSTANCES_ARGUMENT = "p_instance_ids"

# True inside a WaitSpan: the wait's own reads are its events, not spans.
_inside_wait: ContextVar[bool] = ContextVar("taskhub_inside_wait", default=False)

_propagator = TraceContextTextMapPropagator() if trace is not None else None


@dataclass(frozen=True)
class TraceContext:
    """A W3C trace context: the `traceparent` and `tracestate` headers."""

    traceparent: str
    tracestate: str | None = None

    def carrier(self) -> dict[str, str]:
        headers = {"traceparent": self.traceparent}
        if self.tracestate:
            headers["tracestate"] = self.tracestate
        return headers


# An application's own TracerProvider, instead of OpenTelemetry's global one.
_tracer_provider: Any = None


def set_tracer_provider(tracer_provider: Any) -> None:
    """Make the provider's spans with this TracerProvider (None: the global
    one, as set by opentelemetry.trace.set_tracer_provider)."""
    global _tracer_provider
    _tracer_provider = tracer_provider


def enabled() -> bool:
    """Whether the OpenTelemetry API is installed (spans are made at all)."""
    return trace is not None


# The global TracerProvider is set once per process (OpenTelemetry refuses a
# second): once an SDK's is seen it stays; until then, looked at again after
# RECHECK_S, as looking costs a microsecond or more on each call.
RECHECK_S = 1.0
_global_sdk_seen = False
_next_look = 0.0


def recording() -> bool:
    """Whether an SDK records spans: only then are spans made, and only then
    do workers read the stored contexts (one call per instance)."""
    global _global_sdk_seen, _next_look
    if trace is None:
        return False
    if _tracer_provider is not None or _global_sdk_seen:
        return True
    now = time.monotonic()
    if now < _next_look:
        return False
    _next_look = now + RECHECK_S
    _global_sdk_seen = not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )
    return _global_sdk_seen


def current_trace_context() -> TraceContext | None:
    """The caller's current span as W3C headers, or None outside any valid span."""
    if trace is None or _propagator is None:
        return None
    if not trace.get_current_span().get_span_context().is_valid:
        return None
    headers: dict[str, str] = {}
    _propagator.inject(headers)
    traceparent = headers.get("traceparent")
    if traceparent is None:
        return None
    return TraceContext(traceparent, headers.get("tracestate") or None)


_tracer_of: tuple[Any, Any] = (None, None)  # (the TracerProvider, its tracer)


def _tracer() -> Any:
    """The tracer of the provider in use, made once per provider: an SDK
    installed after import, or another one set, is used at once."""
    global _tracer_of
    tracer_provider = _tracer_provider or trace.get_tracer_provider()
    if _tracer_of[0] is not tracer_provider:
        _tracer_of = (tracer_provider, tracer_provider.get_tracer(TRACER_NAME))
    return _tracer_of[1]


def _outcome(operation: str, failure: BaseException | None, result: Any) -> str:
    if failure is None:
        return "empty" if operation in POLLS and result is None else "ok"
    if isinstance(failure, LockLost):
        return "lock_lost"
    if isinstance(failure, TaskHubError) and failure.retryable:
        return "retryable"
    return "refused"


class CallSpan:
    """One provider call's span: current while the call runs (so a start
    records it), or, for a poll, made afterwards with the call's start time,
    and only when it leased something."""

    def __init__(self, schema: str, operation: str) -> None:
        self.operation = operation
        self.name = SPAN_NAMES.get(operation, operation)
        self.attributes: dict[str, str | int] = {
            "taskhub.schema": schema,
            "taskhub.operation": operation,
            "db.system.name": "postgresql",
        }
        self._started_ns = time.time_ns()
        self._span: Any = None
        self._token: Any = None
        self._result: Any = None

    def __enter__(self) -> CallSpan:
        if self.operation not in POLLS:
            kind = trace.SpanKind.PRODUCER if self.name in PRODUCERS else trace.SpanKind.CLIENT
            self._span = _tracer().start_span(self.name, kind=kind, attributes=self.attributes)
            self._token = otel_context.attach(trace.set_span_in_context(self._span))
        return self

    def saw_arguments(self, args: Mapping[str, object]) -> None:
        """A procedure call's arguments: the first that names an instance is the span's.
        A start of many: their count, and the id when it is one (a batch may
        hold 100,000 ids: they are not listed)."""
        if "taskhub.instance_id" in self.attributes:
            return
        many = args.get(INSTANCES_ARGUMENT)
        if isinstance(many, list):
            self._set("taskhub.instance_count", len(many))
            if len(many) == 1 and isinstance(many[0], str):
                self.instance(many[0])
            return
        for name in INSTANCE_ARGUMENTS:
            value = args.get(name)
            if isinstance(value, str):
                self.instance(value)
                return

    def instance(self, instance_id: str | None) -> None:
        if instance_id and "taskhub.instance_id" not in self.attributes:
            self._set("taskhub.instance_id", instance_id)

    def _set(self, name: str, value: str | int) -> None:
        self.attributes[name] = value
        if self._span is not None:
            self._span.set_attribute(name, value)

    def returned(self, result: Any) -> None:
        self._result = result

    def __exit__(
        self,
        kind: type[BaseException] | None,
        failure: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        outcome = _outcome(self.operation, failure, self._result)
        span = self._span
        if span is None:
            if outcome == "empty":
                return
            span = _tracer().start_span(
                self.name,
                kind=trace.SpanKind.CLIENT,
                attributes=self.attributes,
                start_time=self._started_ns,
            )
        else:
            otel_context.detach(self._token)
        span.set_attribute("taskhub.outcome", outcome)
        if outcome in ("retryable", "refused") and failure is not None:
            span.record_exception(failure)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(failure)))
        span.end()


def call_span(schema: str, operation: str | None) -> CallSpan | None:
    """The span of one provider call, or None when no SDK would record it
    (the API's spans would be dropped unseen: making them costs ~10 µs a
    call). A caller's context still reaches the stored trace context then,
    through current_trace_context(). None too inside a WaitSpan, whose
    events the wait's reads are."""
    if operation is None or not recording() or _inside_wait.get():
        return None
    return CallSpan(schema, operation)


class WaitSpan:
    """One Client.wait_for_completion: a CLIENT span `wait_for_completion`,
    current for the whole wait, with an event per status read ("status read":
    what it found, and whether the wait heard the hub's wakeups then) and
    per wakeup ("wakeup"). The wait's reads make no span of their own: a
    wait of a minute would otherwise leave dozens of root spans."""

    def __init__(self, schema: str, instance_id: str) -> None:
        self.attributes: dict[str, str] = {
            "taskhub.schema": schema,
            "taskhub.operation": "wait_for_completion",
            "taskhub.instance_id": instance_id,
            "db.system.name": "postgresql",
        }
        self._span: Any = None
        self._tokens: tuple[Any, Any] | None = None

    def __enter__(self) -> WaitSpan:
        if recording():
            self._span = _tracer().start_span(
                "wait_for_completion", kind=trace.SpanKind.CLIENT, attributes=self.attributes
            )
            self._tokens = (
                otel_context.attach(trace.set_span_in_context(self._span)),
                _inside_wait.set(True),
            )
        return self

    def looked(self, status: str, queued_messages: int, listening: bool) -> None:
        """One read of the instance's status."""
        if self._span is not None:
            self._span.add_event(
                "status read",
                {
                    "taskhub.status": status,
                    "taskhub.queued_messages": queued_messages,
                    "taskhub.listening": listening,
                },
            )

    def woken(self) -> None:
        """The hub's channel (or the listener's news) ended a pause early."""
        if self._span is not None:
            self._span.add_event("wakeup")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        failure: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        span, tokens = self._span, self._tokens
        if span is None or tokens is None:
            return
        _inside_wait.reset(tokens[1])
        otel_context.detach(tokens[0])
        if isinstance(failure, WaitTimeout):
            outcome = "timeout"
        else:
            outcome = _outcome("wait_for_completion", failure, True)
        span.set_attribute("taskhub.outcome", outcome)
        if failure is not None:
            span.record_exception(failure)
            span.set_status(trace.Status(trace.StatusCode.ERROR, str(failure)))
        span.end()


@contextmanager
def activity_span(
    name: str,
    parent: TraceContext | None,
    attributes: Mapping[str, str | int],
) -> Iterator[Any]:
    """A worker running one activity: a CONSUMER span in the trace `parent`
    came from (a new trace without one), current while the handler runs."""
    if _propagator is None or not recording():
        yield None  # no SDK would keep the span: none is made (as call_span)
        return
    context = _propagator.extract(parent.carrier()) if parent is not None else None
    with _tracer().start_as_current_span(
        f"activity {name}",
        context=context,
        kind=trace.SpanKind.CONSUMER,
        attributes=dict(attributes),
    ) as span:
        yield span


def activity_outcome(span: Any, completion: Mapping[str, object] | None) -> None:
    """What the activity came to: completed, failed (the span's status is then
    an error), or cancelled (no completion: the lease is gone or given back)."""
    if span is None:
        return
    if completion is None:
        span.set_attribute("taskhub.outcome", "cancelled")
    elif "ActivityCompleted" in completion:
        span.set_attribute("taskhub.outcome", "completed")
    else:
        span.set_attribute("taskhub.outcome", "failed")
        span.set_status(trace.Status(trace.StatusCode.ERROR, _failure_message(completion)))


def _failure_message(completion: Mapping[str, object]) -> str:
    """{"ActivityFailed": {..., "details": {"Application": {"message": m}}}} -> m"""
    body = next(iter(completion.values()), None)
    details = body.get("details") if isinstance(body, dict) else None
    reason = next(iter(details.values()), None) if isinstance(details, dict) else None
    message = reason.get("message") if isinstance(reason, dict) else None
    return str(message) if message else "activity failed"
