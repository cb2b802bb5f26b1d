"""--url as every verb takes it: checked before anything connects, so a typo
is a usage error naming --url (its password masked), not a driver traceback."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict

# postgresql+psycopg:// is SQLAlchemy's spelling, which DATABASE_URL may carry.
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


class InvalidUrl(ValueError):
    """--url is not something libpq can connect with."""


def _check_ports(ports: object) -> None:
    # libpq parses a port lazily: "notaport" would only fail at connect, and
    # SQLAlchemy (the migrations) fails on it with a ValueError.
    for port in str(ports or "").split(","):
        if port and not (port.isdigit() and 1 <= int(port) <= 65535):
            raise InvalidUrl(f"port {port!r} is not a number from 1 to 65535")


def libpq_url(url: str) -> str:
    """`url` as both psycopg and the migrations (SQLAlchemy) take it: a
    postgresql:// URL. A keyword string (host=... dbname=...) becomes one."""
    scheme, separator, rest = url.strip().partition("://")
    if separator and scheme.lower() not in SCHEMES:
        raise InvalidUrl(f"the scheme must be postgresql://, not {scheme}://")
    text = f"postgresql://{rest}" if separator else url
    try:
        params = conninfo_to_dict(text)
    except psycopg.Error as error:
        problem = " ".join(str(error).split())
        raise InvalidUrl(
            f"not a postgresql:// URL or libpq connection string ({problem})"
        ) from None
    _check_ports(params.get("port"))
    # %20, not +, for a space: libpq decodes percent escapes only.
    return text if separator else "postgresql://?" + urlencode(params, quote_via=quote)
