"""The dashboard's sign-in against a guesser, served (issue 54): wrong
passwords counted per client address and per user, a limited request a 429
with Retry-After; a page load that checks a password once; a proxy's user
header sent twice; and replicas that share a configured secret, each taking
the confirmations the other asked. Against a real hub through Starlette's
TestClient, the client's address as a trusted proxy forwards it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from provider.dashboard.access import AccessPolicy, networks
from provider.dashboard.actions import CSRF_COOKIE
from provider.dashboard.app import dashboard_app
from provider.dashboard.passwords import Account, hash_line, read_accounts
from provider.dashboard.sign_in import Authenticator, VerifiedCache
from provider.dashboard.throttle import FREE_FAILURES, SignInThrottle
from tests.ops.test_dashboard_security import dead_letters, the_dead_letter
from tests.support.dashboard import LOCAL, ask, basic, confirm, token_of

PASSWORDS = {"alice": "alice's passphrase", "bob": "bob's passphrase"}
PROXY, GUESSER, OFFICE = "10.0.0.7", "203.0.113.9", "198.51.100.4"
PAGE_LOAD = ("/", "/static/dashboard.css", "/static/refresh.js", "/panels/overview")


class Clock:
    def __init__(self) -> None:
        self.now = 10_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def accounts() -> dict[str, Account]:
    lines = [hash_line(name, "operator", password) for name, password in PASSWORDS.items()]
    return read_accounts("\n".join(lines), "the test's users")


def behind_proxy(accounts: dict[str, Account]) -> AccessPolicy:
    """Basic auth, served behind a proxy at PROXY that forwards the client."""
    return AccessPolicy(accounts=accounts, forwarded_allow=networks([PROXY]))


def get(client: TestClient, path: str, user: str, password: str, source: str) -> Any:
    return client.get(path, headers={**basic(user, password), "X-Forwarded-For": source})


@pytest.fixture
def served(database_url: str, busy_hub: str, accounts: dict[str, Account]) -> Iterator[TestClient]:
    """The dashboard as it starts by default, behind the proxy."""
    app = dashboard_app(database_url, busy_hub, access=behind_proxy(accounts))
    with TestClient(app, base_url=LOCAL, client=(PROXY, 40000)) as client:
        yield client


def test_twenty_wrong_passwords_from_one_address_get_429_before_the_twentieth(
    served: TestClient,
) -> None:
    answers = [get(served, "/", "alice", f"guess {n}", GUESSER) for n in range(20)]
    statuses = [answer.status_code for answer in answers]
    assert statuses[:FREE_FAILURES] == [401] * FREE_FAILURES, statuses
    assert 429 in statuses[:19], statuses
    limited = answers[statuses.index(429)]
    assert int(limited.headers["retry-after"]) >= 1
    assert "too many failed sign-ins" in limited.text and limited.text.count("\n") == 1
    assert "www-authenticate" not in limited.headers  # no new prompt to guess into


@pytest.fixture
def clocked(
    database_url: str, busy_hub: str, accounts: dict[str, Account]
) -> Iterator[tuple[TestClient, Clock, list[str]]]:
    """The dashboard behind the proxy, its sign-in on a test clock, with
    the names its password checks (scrypt's own) ran for."""
    clock, checked = Clock(), []

    def check(account: Account, password: str) -> bool:
        checked.append(account.name or "(no such user)")
        return account.matches(password)

    policy = behind_proxy(accounts)
    authenticator = Authenticator(
        policy, SignInThrottle(clock=clock), VerifiedCache(clock=clock), check
    )
    app = dashboard_app(database_url, busy_hub, access=policy, authenticator=authenticator)
    with TestClient(app, base_url=LOCAL, client=(PROXY, 40000)) as client:
        yield client, clock, checked


def test_an_address_and_a_user_wait_after_five_failures_and_the_wait_grows(
    clocked: tuple[TestClient, Clock, list[str]], caplog: pytest.LogCaptureFixture
) -> None:
    client, clock, checked = clocked
    with caplog.at_level(logging.WARNING, logger="provider.dashboard"):
        for n in range(FREE_FAILURES):
            assert get(client, "/", "alice", f"guess {n}", GUESSER).status_code == 401
        limited = [get(client, "/", "alice", "guess", GUESSER) for _ in range(10)]
    assert {(a.status_code, a.headers["retry-after"]) for a in limited} == {(429, "1")}
    assert len(checked) == FREE_FAILURES  # the limited ones were refused unchecked
    logged = [r.getMessage() for r in caplog.records if "wait" in r.getMessage()]
    assert logged == [
        "sign-ins for user 'alice' or from 203.0.113.9 wait 1 s after repeated failures"
    ]
    assert "guess" not in caplog.text

    # The address waits for everyone, the user from everywhere; others go on.
    assert get(client, "/", "bob", PASSWORDS["bob"], GUESSER).status_code == 429
    assert get(client, "/", "alice", PASSWORDS["alice"], OFFICE).status_code == 429
    assert get(client, "/", "bob", PASSWORDS["bob"], OFFICE).status_code == 200
    clock.now += 1
    assert get(client, "/", "alice", "guess again", GUESSER).status_code == 401
    assert get(client, "/", "alice", "guess", GUESSER).headers["retry-after"] == "2"
    clock.now += 2
    assert get(client, "/", "alice", PASSWORDS["alice"], GUESSER).status_code == 200


def test_a_page_load_checks_the_password_once(
    clocked: tuple[TestClient, Clock, list[str]],
) -> None:
    client, _, checked = clocked
    for _ in range(3):
        for path in PAGE_LOAD:
            assert get(client, path, "alice", PASSWORDS["alice"], OFFICE).status_code == 200
    assert checked == ["alice"]


def test_a_user_header_sent_twice_through_a_trusted_proxy_is_refused(
    database_url: str, busy_hub: str, caplog: pytest.LogCaptureFixture
) -> None:
    policy = AccessPolicy(
        proxy_header="x-forwarded-user",
        proxy_operators=frozenset({"ops"}),
        forwarded_allow=networks([PROXY]),
    )
    app = dashboard_app(database_url, busy_hub, allow_actions=True, access=policy)
    with TestClient(app, base_url=LOCAL, client=(PROXY, 40000)) as proxy:
        with caplog.at_level(logging.WARNING, logger="provider.dashboard"):
            for names in (["vera", "ops"], ["ops", "ops"]):
                twice = [("X-Forwarded-User", name) for name in names]
                answer = proxy.get("/dead-letters", headers=twice)
                assert answer.status_code == 400, names
                assert "x-forwarded-user header is there 2 times" in answer.text
                assert "quiet" not in answer.text and '<form method="post"' not in answer.text
        assert "named 2 users in x-forwarded-user" in caplog.text
        assert proxy.get("/", headers={"X-Forwarded-User": "ops"}).status_code == 200


SECRET = b"a secret both replicas are given: 44 chars."


def replica(database_url: str, schema: str, secret: bytes | None) -> TestClient:
    app = dashboard_app(database_url, schema, allow_actions=True, secret=secret)
    return TestClient(app, base_url=LOCAL)


@pytest.mark.parametrize("shared", [True, False], ids=["one secret", "a secret each"])
def test_a_replica_takes_the_confirmation_another_replica_asked_only_given_one_secret(
    database_url: str, busy_hub: str, sql: psycopg.Connection[Any], shared: bool
) -> None:
    """Behind a load balancer the question may come from one replica and the
    confirmation go to the other: the page's CSRF token and the confirmation
    must be good on both."""
    fields = {"dead_letter_id": the_dead_letter(sql, busy_hub)}
    with (
        replica(database_url, busy_hub, SECRET) as one,
        replica(database_url, busy_hub, SECRET if shared else None) as two,
    ):
        asked = ask(one, "requeue", fields, "/dead-letters")
        assert asked.status_code == 200 and 'id="question"' in asked.text
        two.cookies.set(CSRF_COOKIE, token_of(asked.text))
        done = confirm(two, "requeue", fields, asked.text)
        if shared:
            assert done.status_code == 200 and "is back on its queue" in done.text
        else:
            assert done.status_code == 403 and "CSRF token" in done.text
    assert dead_letters(sql, busy_hub) == (0 if shared else 1)
