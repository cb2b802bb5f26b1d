"""JSON texts nested to a given depth, counted as the duroxide runtime's
decoder counts: arrays and objects, a scalar being no level."""

from __future__ import annotations

import json
from typing import Any

# What the hub stores and hands over (taskhub_max_json_depth).
MAX_DEPTH = 126
# Past the limit, and past what each part of the stack can parse: the
# runtime (126 in a fetch), the old limit (500), the server's jsonb parser
# (about 15,000 on the default 2 MB stack).
TOO_DEEP = (127, 129, 500, 5_000, 20_000)

_MARK = "taskhub-deep-json-mark"


def nested(levels: int) -> str:
    """Empty arrays, `levels` deep."""
    return "[" * levels + "]" * levels


def deepened(document: dict[str, Any], depth: int) -> str:
    """The text of `document` with an "extra" member that makes it `depth`
    levels deep: added to the innermost object of a chain of one-member
    objects ({"Variant": {...}} puts it in the variant's object)."""
    copy = json.loads(json.dumps(document))
    target, level = copy, 1
    while len(target) == 1 and isinstance(only := next(iter(target.values())), dict):
        target, level = only, level + 1
    if depth <= level:
        raise ValueError(f"{depth} levels cannot hold a document {level} deep")
    target["extra"] = _MARK
    return json.dumps(copy).replace(json.dumps(_MARK), nested(depth - level))


def depth_of(text: str) -> int:
    """The nesting of a JSON text, without a parser's recursion."""
    deepest = level = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            deepest = max(deepest, level)
        elif char in "]}":
            level -= 1
    return deepest
