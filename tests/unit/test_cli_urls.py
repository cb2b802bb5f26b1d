"""--url as every verb takes it (provider/cli/urls.py, options.database_url):
the spellings accepted and the one postgresql:// URL each becomes (what both
psycopg and the migrations take), and the refusals, each a usage error
(exit 2) made before anything connects, with the password masked."""

from __future__ import annotations

import json

import pytest
from psycopg.conninfo import conninfo_to_dict

from provider.cli.options import PASSWORD_IN_ARGUMENTS, USAGE, Failure, database_url
from provider.cli.urls import LIBPQ_TARGET_VARIABLES, InvalidUrl, libpq_url
from tests.unit.cli_runs import PASSWORD, only_line, run

SAME_URL = {
    "postgresql://": ("postgresql://u@h:5432/db", "postgresql://u@h:5432/db"),
    "postgres:// (libpq's alias)": ("postgres://u@h/db", "postgresql://u@h/db"),
    "SQLAlchemy's postgresql+psycopg://": ("postgresql+psycopg://u@h/db", "postgresql://u@h/db"),
    "surrounding blanks": ("  postgresql://u@h/db \n", "postgresql://u@h/db"),
    "several hosts": ("postgresql://u@h1:5432,h2:5433/db", "postgresql://u@h1:5432,h2:5433/db"),
}


@pytest.mark.parametrize(("given", "becomes"), SAME_URL.values(), ids=SAME_URL.keys())
def test_each_url_spelling_becomes_one_postgresql_url(given: str, becomes: str) -> None:
    assert libpq_url(given) == becomes


def test_a_keyword_string_becomes_a_url_with_the_same_settings() -> None:
    keywords = "host=db.example port=5433 dbname=app user=ops password=p+w&x=y sslmode=require"
    url = libpq_url(keywords)
    assert url.startswith("postgresql://?")
    assert conninfo_to_dict(url) == conninfo_to_dict(keywords)


def test_a_keyword_value_with_a_space_keeps_its_space() -> None:
    keywords = "host=h dbname=app password='a b' options='-c statement_timeout=5s'"
    assert conninfo_to_dict(libpq_url(keywords)) == conninfo_to_dict(keywords)


REFUSED = {
    "another scheme": ("mysql://u@h/db", "the scheme must be postgresql://, not mysql://"),
    "port not a number": ("postgresql://u@h:abc/db", "port 'abc' is not a number"),
    "port 0": ("postgresql://u@h:0/db", "port '0' is not a number from 1 to 65535"),
    "port 65536": ("postgresql://u@h:65536/db", "port '65536' is not a number"),
    "a bad port of several": ("postgresql://u@h1:5432,h2:x/db", "port 'x' is not a number"),
    "a keyword port": ("host=h port=54x", "port '54x' is not a number"),
    "no url at all": ("not a url", "not a libpq URL or connection string"),
}


@pytest.mark.parametrize(("given", "says"), REFUSED.values(), ids=REFUSED.keys())
def test_what_libpq_could_not_connect_with_is_refused_saying_why(given: str, says: str) -> None:
    with pytest.raises(InvalidUrl, match=says.replace("(", r"\(").replace(")", r"\)")):
        libpq_url(given)


@pytest.mark.parametrize("given", [None, "", "   "], ids=["unset", "empty", "blank"])
def test_no_url_is_a_usage_error_naming_every_way_to_give_one(
    given: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in LIBPQ_TARGET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(Failure) as refused:
        database_url(given)
    assert refused.value.code == USAGE
    assert refused.value.message == (
        "--url is required (or set DATABASE_URL, or PGSERVICE / PGHOST for libpq)"
    )


def test_a_refused_url_is_shown_masked_with_an_example_of_a_good_one() -> None:
    with pytest.raises(Failure) as refused:
        database_url(f"mysql://u:{PASSWORD}@h/db")
    failure = refused.value
    assert failure.code == USAGE and PASSWORD not in failure.message
    assert failure.message.startswith("--url 'mysql://***@h/db': the scheme must be")
    assert failure.hint == "e.g. postgresql://host:5432/dbname?user=name"


def test_a_malformed_url_is_exit_2_before_anything_connects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # db.invalid cannot resolve: had it tried to connect, the exit would be 4.
    ran = run(capsys, "inspect", "queues", "--url", f"postgresql://u:{PASSWORD}@db.invalid:x/db")
    assert ran.code == USAGE
    assert "--url 'postgresql://***@db.invalid:x/db': port 'x'" in only_line(ran)


def test_a_password_libpq_quotes_in_its_complaint_is_masked_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ran = run(capsys, "inspect", "queues", "--url", f"postgresql://u:{PASSWORD}%zz@h/db")
    assert ran.code == USAGE
    line = ran.err.strip()
    assert "invalid percent-encoded token" in line
    assert PASSWORD not in line


# -- a password on the command line: ps shows it to every user --------------

UNREACHABLE = "@127.0.0.1:1/db?connect_timeout=2"


@pytest.mark.parametrize(
    "url",
    [f"postgresql://u:{PASSWORD}{UNREACHABLE}", f"host=127.0.0.1 port=1 password={PASSWORD}"],
    ids=["in the URL", "a keyword"],
)
def test_a_password_in_url_is_warned_of_in_one_line_first(
    capsys: pytest.CaptureFixture[str], url: str
) -> None:
    ran = run(capsys, "inspect", "queues", "--url", url)
    warning, error = ran.err.splitlines()
    assert warning == f"taskhub-pg: {PASSWORD_IN_ARGUMENTS}"
    assert "DATABASE_URL" in warning and "PGSERVICE" in warning and "pgpass" in warning
    assert error.startswith("taskhub-pg: database unreachable") and PASSWORD not in ran.err


def test_under_json_the_warning_is_a_json_object_too(capsys: pytest.CaptureFixture[str]) -> None:
    ran = run(
        capsys, "inspect", "queues", "--json", "--url", f"postgresql://u:{PASSWORD}{UNREACHABLE}"
    )
    warning, error = (json.loads(line) for line in ran.err.splitlines())
    assert warning == {"warning": PASSWORD_IN_ARGUMENTS} and error["exit_code"] == 4


@pytest.mark.parametrize("how", ["no password in --url", "the password in DATABASE_URL"])
def test_no_warning_without_a_password_on_the_command_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    if how == "no password in --url":
        ran = run(capsys, "inspect", "queues", "--url", f"postgresql://u{UNREACHABLE}")
    else:
        monkeypatch.setenv("DATABASE_URL", f"postgresql://u:{PASSWORD}{UNREACHABLE}")
        ran = run(capsys, "inspect", "queues")
    assert len(ran.err.splitlines()) == 1 and "warning" not in ran.err


def test_without_url_libpq_environment_names_the_database(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """PGHOST / PGPORT (or PGSERVICE) without --url or DATABASE_URL: libpq's
    own defaults, as psql takes them (here a closed port: exit 4, not 2)."""
    monkeypatch.delenv("DATABASE_URL", raising=False)
    for name in LIBPQ_TARGET_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PGHOST", "127.0.0.1")
    monkeypatch.setenv("PGPORT", "1")
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    ran = run(capsys, "inspect", "queues")
    assert ran.code == 4 and "port 1" in only_line(ran)
