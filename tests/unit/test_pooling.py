"""What each pooler setting does to the provider's connections
(provider/client/pooling.py); the real PgBouncer is in tests/client/test_pooler.py."""

from __future__ import annotations

from typing import Any

import pytest

from provider.client.pooling import (
    PINNED_PATH_OPTION,
    PSYCOPG_PREPARE_THRESHOLD,
    Pooling,
    after_looking,
)
from provider.config import TaskHubConfig
from provider.errors import InvalidInput, RetryableError, is_retryable_sqlstate

URL = "postgresql://app@db/app"


def config(**settings: Any) -> TaskHubConfig:
    return TaskHubConfig(url=URL, **settings)


def test_direct_prepares_and_sends_the_timeout_as_a_startup_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PGOPTIONS", raising=False)
    pooling = Pooling("direct")
    settings = pooling.connection_settings(config())
    assert settings["prepare_threshold"] == PSYCOPG_PREPARE_THRESHOLD
    assert settings["options"] == f"{PINNED_PATH_OPTION} -c statement_timeout=30000"
    assert pooling.per_call_timeout_ms(config()) is None
    assert pooling.listen_url(config()) == URL


def test_session_pooling_sends_no_startup_option_and_sets_the_timeout_once() -> None:
    pooling = Pooling("session")
    settings = pooling.connection_settings(config())
    assert "options" not in settings
    assert settings["prepare_threshold"] == PSYCOPG_PREPARE_THRESHOLD
    assert pooling.session_timeout_ms(config()) == 30_000
    assert pooling.per_call_timeout_ms(config()) is None
    assert pooling.listen_url(config()) == URL


def test_transaction_pooling_prepares_nothing_and_bounds_each_call() -> None:
    pooling = Pooling("transaction")
    settings = pooling.connection_settings(config())
    assert "options" not in settings
    assert settings["prepare_threshold"] is None
    assert pooling.session_timeout_ms(config()) is None
    assert pooling.per_call_timeout_ms(config()) == 30_000
    # No LISTEN through it: only a listen_url of its own.
    assert pooling.listen_url(config()) is None
    direct = "postgresql://app@db-direct/app"
    assert pooling.listen_url(config(listen_url=direct)) == direct


def test_an_explicit_prepare_threshold_wins() -> None:
    # PgBouncer 1.21+ with max_prepared_statements carries protocol-level statements.
    assert Pooling("transaction").prepare_threshold(config(prepare_threshold=3)) == 3
    assert Pooling("direct").prepare_threshold(config(prepare_threshold=None)) is None


def test_no_statement_timeout_sets_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PGOPTIONS", raising=False)
    no_timeout = config(statement_timeout_ms=None)
    assert Pooling("direct").connection_settings(no_timeout)["options"] == PINNED_PATH_OPTION
    assert Pooling("transaction").per_call_timeout_ms(no_timeout) is None


def test_the_urls_own_options_are_kept_before_the_pinned_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The keyword replaces the URL's options: they are carried over, else
    PGOPTIONS (which libpq reads only when a connection has none)."""
    given = TaskHubConfig(url=f"{URL}?options=-c%20work_mem%3D8MB", statement_timeout_ms=None)
    assert Pooling("direct").connection_settings(given)["options"] == (
        f"-c work_mem=8MB {PINNED_PATH_OPTION}"
    )
    monkeypatch.setenv("PGOPTIONS", "-c jit=off")
    assert Pooling("direct").connection_settings(config(statement_timeout_ms=None))["options"] == (
        f"-c jit=off {PINNED_PATH_OPTION}"
    )


def test_auto_takes_the_transaction_settings_behind_a_pooler_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert after_looking(config(), pooled=False) == Pooling("direct")
    assert after_looking(config(), pooled=True) == Pooling("transaction", detected=True)
    assert "pooler='session' if it pins sessions" in caplog.text
    # Named, it stays as named.
    assert after_looking(config(pooler="session"), pooled=True) == Pooling("session")


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"pooler": "pgbouncer"}, "pooler must be one of auto, direct, session, transaction"),
        ({"prepare_threshold": -1}, "prepare_threshold must be a whole number"),
        ({"prepare_threshold": "5"}, "prepare_threshold must be a whole number"),
        ({"prepare_threshold": True}, "prepare_threshold must be a whole number"),
    ],
)
def test_bad_settings_are_refused(settings: dict[str, Any], words: str) -> None:
    with pytest.raises(InvalidInput, match=words):
        config(**settings)


@pytest.mark.parametrize(
    "sqlstate",
    ["25006", "57P01", "57P02", "57P03", "08000", "08003", "08006", "08P01", "26000", "42P05"],
)
def test_what_a_failover_or_a_pooler_says_is_retryable(sqlstate: str) -> None:
    assert is_retryable_sqlstate(sqlstate)
    assert RetryableError("call", "x", sqlstate).retryable


def test_the_listen_url_is_hidden_like_the_url() -> None:
    shown = repr(config(listen_url="postgresql://app:secret@db/app"))
    assert "secret" not in shown
