"""Passwords kept out of everything the provider and the CLI print, log or
raise: the one place that decides what of a database URL may be shown.

The rule for a URL, whatever its password holds: everything between `://`
and the URL's last `@` (the user and the password) is shown as ***. libpq
itself ends the user and password at the *first* `@` or `/`, so a password
written with a raw `@`, `/` or space is misread: its tail becomes the host,
the port or the database, which libpq's errors then quote. Such a URL is
refused before libpq sees it (`url_problem`), and what libpq says of a
connection string it cannot parse is shown with the fragment it quotes
masked (`libpq_complaint`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote

import psycopg
from psycopg.conninfo import conninfo_to_dict

MASK = "***"
_SEPARATOR = "://"
# A known password shorter than this is masked only where libpq quotes it
# ("..."), lest every "p" of a message become ***.
_MIN_BARE_MASK = 4
# password=... of a keyword string, whole: quoted ('a b', with \' inside; one
# never closed runs to the end) or not (libpq's `\ ` keeps a space in it). A
# run of backslashes escapes what follows, so the repr of a string (its `\`
# doubled) is masked whole too: masking too much is the safe side.
_KEYWORD_PASSWORD = re.compile(
    r"(password\s*=\s*)(?P<password>'(?:[^'\\]|\\+.)*(?:'|$)|(?:\\+.?|[^\s\\])+)",
    re.IGNORECASE | re.DOTALL,
)
# What libpq reads as the end of a URL's user and password, or refuses there.
_MISREAD = re.compile(r"[@/\s]")
# No "@" in it: a message's last "@" ends the part a URL rule masks.
MISREAD_PROBLEM = (
    "its user or password holds a raw at sign, slash or space, where libpq would end them:"
    " percent-encode each (%40, %2F, %20)"
)


def _userinfo_span(text: str) -> tuple[int, int] | None:
    """Where the user and password of the first URL in `text` are: from
    after its `://` to the last `@` after that (None: no user in a URL)."""
    start = text.find(_SEPARATOR)
    if start < 0:
        return None
    start += len(_SEPARATOR)
    end = text.rfind("@", start)
    return (start, end) if end > start else None


def mask_url(text: str) -> str:
    """`text` (a URL, a keyword string, or a message quoting one) as it may
    be shown: a URL's user and password as ***, a password=... value too."""
    span = _userinfo_span(text)
    if span is not None:
        text = text[: span[0]] + MASK + text[span[1] :]
    return _KEYWORD_PASSWORD.sub(rf"\g<1>{MASK}", text)


def masked(text: str, passwords: Iterable[str] = ()) -> str:
    """`text` with every form of `passwords` (passwords_of) masked, then any
    URL or keyword password in it (mask_url). The known passwords go first:
    one holding an `@` would otherwise move the URL's last `@`."""
    for password in sorted(set(passwords), key=len, reverse=True):
        text = text.replace(f'"{password}"', f'"{MASK}"')
        if len(password) >= _MIN_BARE_MASK:
            text = text.replace(password, MASK)
    return mask_url(text)


def _encodings(password: str) -> set[str]:
    """A password as written, decoded, and as the usual encoders write it."""
    decoded = unquote(password)
    return {password, decoded, quote(decoded, safe=""), quote(decoded), quote_plus(decoded)}


def _keyword_value(raw: str) -> str:
    """A keyword value as libpq reads it: unquoted, a backslash keeping the
    character after it (a quote never closed: what follows it)."""
    if raw.startswith("'"):
        raw = raw[1:-1] if len(raw) >= 2 and raw.endswith("'") else raw[1:]
    return re.sub(r"\\(.)", r"\1", raw, flags=re.DOTALL)


def passwords_of(url: str) -> tuple[str, ...]:
    """Every form of `url`'s password a message may quote: as written (even
    in a URL libpq cannot parse), decoded, encoded, and as libpq parses it."""
    found: set[str] = set()
    span = _userinfo_span(url)
    if span is not None:
        userinfo = url[span[0] : span[1]]
        _, colon, password = userinfo.partition(":")
        if colon and password:
            found |= {userinfo, *_encodings(password)}
    for match in _KEYWORD_PASSWORD.finditer(url):
        found |= {match["password"], *_encodings(_keyword_value(match["password"]))}
    try:
        parsed = conninfo_to_dict(url).get("password")
    except psycopg.Error:
        parsed = None
    if parsed:
        found |= _encodings(str(parsed))
    return tuple(password for password in found if password)


def libpq_complaint(error: psycopg.Error) -> str:
    """What libpq says of a connection string it cannot parse, on one line,
    with what it quotes masked: the fragment it quotes ("a b@h", "a%zz") may
    be a piece of the password."""
    text = " ".join(str(error).split())
    first, last = text.find('"'), text.rfind('"')
    if first < last:
        text = f"{text[: first + 1]}{MASK}{text[last:]}"
    return text


def url_problem(url: str) -> str | None:
    """Why `url` cannot be handed to libpq as it is, in words that quote
    nothing of its user or password; None when it can."""
    span = _userinfo_span(url)
    if span is not None and _MISREAD.search(url[span[0] : span[1]]):
        return MISREAD_PROBLEM
    try:
        conninfo_to_dict(url)
    except psycopg.Error as error:
        return f"not a libpq URL or connection string ({libpq_complaint(error)})"
    return None


def has_password(url: str) -> bool:
    """Does `url` carry a password (in its user part, or as password=...)?"""
    span = _userinfo_span(url)
    if span is not None and ":" in url[span[0] : span[1]]:
        return True
    if _KEYWORD_PASSWORD.search(url):
        return True
    try:
        return bool(conninfo_to_dict(url).get("password"))
    except psycopg.Error:
        return False
