"""--url as every verb takes it: checked before anything connects, so a typo
is a usage error naming --url (with no user or password), not a driver
traceback. Without --url and DATABASE_URL, libpq's own environment (PGSERVICE,
PGHOST, ...) says where the database is, as it does for psql."""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote, urlencode

from psycopg.conninfo import conninfo_to_dict

from provider.masking import url_problem

# postgresql+psycopg:// is SQLAlchemy's spelling, which DATABASE_URL may carry.
SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
# The variables by which libpq finds a database when the URL names none
# (PGPASSWORD and PGPASSFILE give a password only, not a database).
LIBPQ_TARGET_VARIABLES = (
    "PGSERVICE",
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGDATABASE",
    "PGUSER",
)
# The URL that leaves everything to libpq's environment and service file.
LIBPQ_DEFAULTS = "postgresql://"


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
    problem = url_problem(text)
    if problem is not None:
        raise InvalidUrl(problem)
    params = conninfo_to_dict(text)
    _check_ports(params.get("port"))
    # %20, not +, for a space: libpq decodes percent escapes only.
    return text if separator else "postgresql://?" + urlencode(params, quote_via=quote)


def libpq_environment(environ: Mapping[str, str] | None = None) -> str | None:
    """LIBPQ_DEFAULTS when libpq's environment names a database (PGSERVICE,
    PGHOST, ...), else None."""
    environ = os.environ if environ is None else environ
    return LIBPQ_DEFAULTS if any(environ.get(name) for name in LIBPQ_TARGET_VARIABLES) else None
