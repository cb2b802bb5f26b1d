"""A start's priority and labels as the hub's functions take them (
docs/flow-control.md): the types are checked here, the rules (0-9, the
label's form, at most 8) by the hub (taskhub_check_steering), in one line."""

from __future__ import annotations

from collections.abc import Mapping

from provider.errors import InvalidInput


def label_texts(operation: str, priority: object, labels: object) -> list[str]:
    """The labels as 'key=value' texts, after a check of the types."""
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise InvalidInput(operation, f"priority must be a whole number, got {priority!r}")
    labels = labels or {}
    if not isinstance(labels, Mapping) or not all(
        isinstance(key, str) and isinstance(value, str) for key, value in labels.items()
    ):
        raise InvalidInput(operation, "labels must map texts to texts, as {'tenant': 'acme'}")
    if any("=" in key for key in labels):
        raise InvalidInput(operation, "a label's key holds no '=' (key=value is made of it)")
    return [f"{key}={value}" for key, value in labels.items()]
