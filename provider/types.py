"""Typed values passed to and returned by the provider."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class KvEntry:
    value: str
    last_updated_at_ms: int


@dataclass(frozen=True)
class OrchestrationItem:
    """One leased orchestration turn: an instance with all its visible messages."""

    instance_id: str
    orchestration_name: str
    orchestration_version: str
    execution_id: int
    history: list[JsonObject]
    messages: list[JsonObject]
    lock_token: str
    attempt_count: int
    kv_snapshot: dict[str, KvEntry] = field(default_factory=dict)
    # Set when a stored history event is not valid JSON; history is then empty.
    history_error: str | None = None


@dataclass(frozen=True)
class WorkItemLease:
    """One leased worker item (an ActivityExecute work item)."""

    work_item: JsonObject
    lock_token: str
    attempt_count: int


@dataclass(frozen=True)
class TagFilter:
    """Which worker items a worker takes, by tag.

    `default_only` (untagged items), `tags` (items with one of `tags`),
    `default_and` (both), `any`, `none` (nothing).
    """

    mode: str = "default_only"
    tags: tuple[str, ...] = ()

    _MODES = ("default_only", "tags", "default_and", "any", "none")

    def __post_init__(self) -> None:
        if self.mode not in self._MODES:
            raise ValueError(f"tag mode must be one of {self._MODES}, got {self.mode!r}")
        if self.mode in ("tags", "default_and") and not self.tags:
            raise ValueError(f"tag mode {self.mode!r} needs at least one tag")

    @classmethod
    def default_only(cls) -> TagFilter:
        return cls("default_only")

    @classmethod
    def only(cls, *tags: str) -> TagFilter:
        return cls("tags", tuple(sorted(tags)))

    @classmethod
    def default_and(cls, *tags: str) -> TagFilter:
        return cls("default_and", tuple(sorted(tags)))

    @classmethod
    def any(cls) -> TagFilter:
        return cls("any")

    @classmethod
    def none(cls) -> TagFilter:
        return cls("none")


@dataclass(frozen=True)
class VersionRange:
    """Inclusive range of pinned runtime versions (major, minor, patch)."""

    minimum: tuple[int, int, int]
    maximum: tuple[int, int, int]

    @staticmethod
    def pack(version: tuple[int, int, int]) -> int:
        major, minor, patch = version
        return major * 1_000_000 + minor * 1_000 + patch
