"""provider/masking.py, the one place that decides what of a database URL
may be shown: everything between :// and the URL's last @ masked whatever it
holds; a URL libpq would misread refused in words that quote none of it;
libpq's complaint about a string it cannot parse shown with its quote
masked. No database: libpq parses, nothing connects."""

from __future__ import annotations

from urllib.parse import quote_plus

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from provider.client.connecting import check_url
from provider.errors import ConfigurationError, PermanentError
from provider.masking import (
    MISREAD_PROBLEM,
    has_password,
    libpq_complaint,
    mask_url,
    masked,
    passwords_of,
    url_problem,
)

PASSWORD = "Zq7v/Kd9w+Wx4y=Rt2z@Mn5u Pl8s"
ENCODED = "Zq7v%2FKd9w%2BWx4y%3DRt2z%40Mn5u%20Pl8s"

SHOWN = {
    "encoded": (f"postgresql://app:{ENCODED}@db:5432/app", "postgresql://***@db:5432/app"),
    "raw": (f"postgresql://app:{PASSWORD}@db/app", "postgresql://***@db/app"),
    "raw, with ://": ("postgresql://app:a://b@c@db/app", "postgresql://***@db/app"),
    "no password": ("postgresql://app@db/app", "postgresql://***@db/app"),
    "no user": ("postgresql://db:5432/app", "postgresql://db:5432/app"),
    "several hosts": ("postgresql://a:b@h1:1,h2:2/d", "postgresql://***@h1:1,h2:2/d"),
    "IPv6": ("postgresql://a:b@[::1]:5432/d", "postgresql://***@[::1]:5432/d"),
    "in the query": (f"postgresql://db/app?password={ENCODED}", "postgresql://db/app?password=***"),
    "keywords": ("host=db password='a b' user=u", "host=db password=*** user=u"),
    "keywords, unquoted": ("host=db password=s3cret user=u", "host=db password=*** user=u"),
    "keywords, an escaped space": (
        r"host=db password=Wr0ng\ S3cret user=u",
        "host=db password=*** user=u",
    ),
    "keywords, an escaped quote": (
        r"host=db password='Wr0ng\' S3cret' user=u",
        "host=db password=*** user=u",
    ),
    "keywords, as repr quotes them": (
        repr(r"host=db password=Wr0ng\ S3cret user=u"),
        "'host=db password=*** user=u'",
    ),
    "keywords, a quote never closed": ("host=db password='Wr0ng S3cret", "host=db password=***"),
    "in a message": ("refused 'postgresql://u:p@h/d': no", "refused 'postgresql://***@h/d': no"),
}


@pytest.mark.parametrize(("url", "shown"), SHOWN.values(), ids=SHOWN.keys())
def test_everything_between_the_scheme_and_the_last_at_is_masked(url: str, shown: str) -> None:
    assert mask_url(url) == shown


def test_every_form_of_the_password_is_masked_in_a_message() -> None:
    url = f"postgresql://app:{ENCODED}@db/app"
    forms = passwords_of(url)
    assert PASSWORD in forms and ENCODED in forms
    message = f'bad "{PASSWORD}", or {ENCODED}, or {quote_plus(PASSWORD)} at {url}'
    assert masked(message, forms) == 'bad "***", or ***, or *** at postgresql://***@db/app'


def test_every_form_of_an_escaped_keyword_password_is_masked_in_a_message() -> None:
    url = r"host=db user=u password=Wr0ng\ S3cret"
    forms = passwords_of(url)
    assert {r"Wr0ng\ S3cret", "Wr0ng S3cret", "Wr0ng%20S3cret"} <= set(forms)
    message = f'password "Wr0ng S3cret" refused for {url}'
    assert masked(message, forms) == 'password "***" refused for host=db user=u password=***'


def test_a_password_holding_an_at_sign_is_masked_before_the_url_rule() -> None:
    # Had the URL rule gone first, the password's @ would be the "last @".
    forms = passwords_of("postgresql://u:p%40ss@h/d")
    assert masked('postgresql://u@h/d: "p@ss"', forms) == 'postgresql://***@h/d: "***"'


MISREAD = {
    "a raw /": "postgresql://u:ab/cd@h/db",
    "a raw @": "postgresql://u:p@ss@h/db",
    "a raw space": "postgresql://u:a b@h/db",
    "all of them": f"postgresql://u:{PASSWORD}@h/db",
    "only the space encoded": f"postgresql://u:{PASSWORD.replace(' ', '%20')}@h/db",
}


@pytest.mark.parametrize("url", MISREAD.values(), ids=MISREAD.keys())
def test_a_url_libpq_would_misread_is_refused_quoting_none_of_it(url: str) -> None:
    assert url_problem(url) == MISREAD_PROBLEM
    with pytest.raises(ConfigurationError) as refused:
        check_url("TaskHub.connect", url)
    assert str(refused.value) == (
        f"TaskHub.connect: the database URL 'postgresql://***@h/db': {MISREAD_PROBLEM}"
    )


READ_AS_WRITTEN = {
    "encoded": f"postgresql://u:{ENCODED}@h/db",
    "no user": "postgresql://h/db",
    "keywords": f"host=h password='{PASSWORD}' user=u",
    "a ? and a : in the password": "postgresql://u:a?b:c@h/db",
}


@pytest.mark.parametrize("url", READ_AS_WRITTEN.values(), ids=READ_AS_WRITTEN.keys())
def test_a_url_libpq_reads_as_written_is_not_refused(url: str) -> None:
    assert url_problem(url) is None


def test_what_libpq_quotes_of_a_string_it_cannot_parse_is_masked() -> None:
    with pytest.raises(psycopg.Error) as refused:
        conninfo_to_dict("postgresql://u:s3cr%zz@h/db")
    assert "s3cr" in str(refused.value)  # libpq quotes the token it could not decode
    assert libpq_complaint(refused.value) == 'invalid percent-encoded token: "***"'
    assert url_problem("postgresql://u:s3cr%zz@h/db") == (
        'not a libpq URL or connection string (invalid percent-encoded token: "***")'
    )


@pytest.mark.parametrize(
    ("url", "carries"),
    [
        ("postgresql://u:p@h/db", True),
        ("postgresql://u@h/db", False),
        ("postgresql://h/db?password=p", True),
        ("host=h password=p", True),
        ("host=h user=u", False),
    ],
)
def test_whether_a_url_carries_a_password(url: str, carries: bool) -> None:
    assert has_password(url) is carries


def test_a_provider_error_never_shows_a_url_password() -> None:
    error = PermanentError("connect", f"cannot reach postgresql://u:{PASSWORD}@h/db")
    assert str(error) == "connect: cannot reach postgresql://***@h/db"
    assert PASSWORD not in repr(error) and PASSWORD not in str(error.renamed("TaskHub.open"))
