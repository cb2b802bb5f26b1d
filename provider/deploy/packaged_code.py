"""The code this package ships, as the catalogue holds it once applied.

A function's code is its body (pg_proc.prosrc, the text between the `$$` of
its CREATE FUNCTION, kept verbatim by the server), its language and its SET
clauses. Every function any released revision or sql/head/ creates is listed
here by name, for the schema it is rendered for, in both forms of the fetch's
turn (json and jsonb). What is not in this list, or in the digests of
duroxide's own functions (provider/deploy/vouched_duroxide.py), is not code
the package can vouch for: `taskhub-pg check` names it, whatever a later
`taskhub_record_definitions()` recorded. (A courtesy that names drift, not a
boundary: a session that can do more than the hub's owner runs none of the
hub's code at all, provider/deploy/privileged_session.py.)

The tables and views the files create are listed by name too: the check and
the status tell a hub's own relations from an application's.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from provider.deploy.sql_checks import expand_checks
from provider.deploy.sql_files import TURN_FORMS, read_sql, released_files, substitute_tokens

# The one search_path a packaged function may pin: the catalogue first,
# never a schema a less privileged role can create in.
PINNED_SEARCH_PATH = "search_path=pg_catalog, pg_temp"
# The other SET clauses the package puts on its functions: planner settings,
# and the runtime DDL guard's own records (sql/head/privileges/). None of them
# can make a body run other code.
PACKAGED_SETTING_NAMES = frozenset(
    {"jit", "plan_cache_mode", "enable_seqscan", "enable_bitmapscan", "taskhub.guarded_roles"}
)


def is_packaged_setting(setting: str) -> bool:
    """Whether a SET clause (as pg_proc.proconfig lists it) is one the package puts."""
    return setting == PINNED_SEARCH_PATH or setting.split("=", 1)[0] in PACKAGED_SETTING_NAMES


_FUNCTION = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION __SCHEMA__\.(?P<name>\w+)\((?P<header>.*?)"
    r"\bAS \$\$(?P<body>.*?)\$\$(?P<trailer>[^;]*);",
    flags=re.MULTILINE | re.DOTALL,
)
_LANGUAGE = re.compile(r"\bLANGUAGE\s+(\w+)", flags=re.IGNORECASE)
_RELATION = re.compile(
    r"^CREATE (?:OR REPLACE )?(?:UNLOGGED )?(?P<kind>TABLE|VIEW)(?: IF NOT EXISTS)?"
    r" __SCHEMA__\.(?P<name>\w+)",
    flags=re.MULTILINE,
)


@dataclass(frozen=True)
class Body:
    """One packaged variant of a function: its language and the md5 of its body."""

    language: str
    md5: str


def body_md5(body: str) -> str:
    """The digest `taskhub-pg check` compares with the server's md5(prosrc) of a
    function (provider/operations/drift_check.py)."""
    return hashlib.md5(body.encode("utf-8")).hexdigest()


def _sql_texts() -> list[str]:
    return [read_sql(path) for _, path in released_files()]


@functools.cache
def _function_bodies() -> list[tuple[str, str, str]]:
    """(name, language, body with its checks written out) of every function
    any file creates: the schema-free part of `functions`, parsed once."""
    found = []
    for text in _sql_texts():
        for match in _FUNCTION.finditer(text):
            language = _LANGUAGE.search(match.group("header") + match.group("trailer"))
            if language is None:
                raise ValueError(f"function {match.group('name')} names no LANGUAGE")
            found.append(
                (match.group("name"), language.group(1).lower(), expand_checks(match.group("body")))
            )
    return found


@functools.cache
def functions(schema: str) -> dict[str, frozenset[Body]]:
    """Every function the package ships, by name: each variant it ever shipped."""
    found: dict[str, set[Body]] = {}
    for name, language, body in _function_bodies():
        for form in TURN_FORMS:
            rendered = substitute_tokens(body, schema, form)
            found.setdefault(name, set()).add(Body(language, body_md5(rendered)))
    return {name: frozenset(bodies) for name, bodies in found.items()}


@functools.cache
def relations() -> dict[str, str]:
    """The tables and views the package creates: name -> 'table' or 'view'."""
    found: dict[str, str] = {}
    for text in _sql_texts():
        for match in _RELATION.finditer(text):
            found[match.group("name")] = match.group("kind").lower()
    return found
