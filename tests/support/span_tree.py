"""Finished spans as plain records (to send between processes) and as the
tree a reader checks a trace by."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

# Attributes worth a look in the printed tree.
SHOWN = ("taskhub.instance_id", "taskhub.outcome")


@dataclass(frozen=True)
class SpanRecord:
    name: str
    process: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]

    @classmethod
    def of(cls, span: ReadableSpan, process: str) -> SpanRecord:
        context = span.get_span_context()
        assert context is not None
        return cls(
            name=span.name,
            process=process,
            trace_id=f"{context.trace_id:032x}",
            span_id=f"{context.span_id:016x}",
            parent_id=f"{span.parent.span_id:016x}" if span.parent is not None else None,
            kind=span.kind.name,
            start_ns=span.start_time or 0,
            end_ns=span.end_time or 0,
            attributes=dict(span.attributes or {}),
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpanRecord:
        return cls(**data)


def tree(spans: Iterable[SpanRecord], trace_id: str) -> str:
    """One trace as an indented tree, children in start order."""
    members = [span for span in spans if span.trace_id == trace_id]
    ids = {span.span_id for span in members}
    children: dict[str | None, list[SpanRecord]] = {}
    for span in sorted(members, key=lambda span: span.start_ns):
        parent = span.parent_id if span.parent_id in ids else None
        children.setdefault(parent, []).append(span)
    lines = [f"trace {trace_id}"]

    def show(span: SpanRecord, depth: int) -> None:
        shown = " ".join(f"{key}={span.attributes[key]}" for key in SHOWN if key in span.attributes)
        took_ms = (span.end_ns - span.start_ns) / 1e6
        lines.append(
            f"{'  ' * depth}└─ {span.name}  [{span.kind.lower()}, {span.process},"
            f" {took_ms:.1f} ms]  {shown}".rstrip()
        )
        for child in children.get(span.span_id, []):
            show(child, depth + 1)

    for root in children.get(None, []):
        show(root, 1)
    return "\n".join(lines)
