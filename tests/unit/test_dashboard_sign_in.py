"""The dashboard's sign-in against a guesser, without a server (issue 54):
failures counted per user and per address with a wait that grows
(throttle.py), a limited attempt refused before its password is checked,
verified credentials remembered briefly and never across a changed account
(sign_in.py), a proxy's user header sent twice, the minimum length of a
password, and a configured secret. The password checks are scrypt's own,
counted as they run; time is a test clock."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Awaitable, Callable

import anyio
import pytest
from starlette.datastructures import Headers

from provider.dashboard.access import (
    AccessPolicy,
    Identity,
    client_address,
    client_network,
    networks,
)
from provider.dashboard.passwords import (
    MIN_PASSWORD,
    Account,
    AccountError,
    hash_line,
    parse_line,
)
from provider.dashboard.sign_in import CACHE_FOR_S, Authenticator, Refused, VerifiedCache
from provider.dashboard.throttle import FREE_FAILURES, MAX_DELAY_S, SignInThrottle
from provider.dashboard.tokens import (
    Confirmations,
    CsrfTokens,
    TokenRefused,
    configured_secret,
    hub_secret,
)

ALICE, BOB = "alice's passphrase", "bob's passphrase"
GUESSER, OFFICE = "203.0.113.9", "198.51.100.4"


class Clock:
    def __init__(self) -> None:
        self.now = 5_000.0

    def __call__(self) -> float:
        return self.now


class CountedChecks:
    """Account.matches (scrypt), with the names it was run for, in order."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, account: Account, password: str) -> bool:
        self.names.append(account.name or "(no such user)")
        return account.matches(password)


def cheap(name: str, role: str, password: str) -> Account:
    """An account hashed with a scrypt 32 times cheaper than a users file's:
    the same check, at a cost the unit tier can pay twenty times."""
    salt = secrets.token_bytes(16)
    key = hashlib.scrypt(password.encode(), salt=salt, n=2**10, r=8, p=1, dklen=32)
    return Account(name, role, 2**10, 8, 1, salt, key)


def accounts(alice: str = ALICE) -> dict[str, Account]:
    return {"alice": cheap("alice", "operator", alice), "bob": cheap("bob", "viewer", BOB)}


def basic(user: str, password: str) -> Headers:
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    return Headers({"authorization": f"Basic {encoded}"})


def signing_in(clock: Clock) -> tuple[Authenticator, CountedChecks]:
    checks = CountedChecks()
    authenticator = Authenticator(
        AccessPolicy(accounts=accounts()),
        throttle=SignInThrottle(clock=clock),
        cache=VerifiedCache(clock=clock),
        check=checks,
    )
    return authenticator, checks


def run(attempt: Callable[[], Awaitable[object]]) -> object:
    return anyio.run(attempt)


def sign_in(authenticator: Authenticator, user: str, password: str, network: str) -> object:
    return run(lambda: authenticator.identify(basic(user, password), network, network))


# -- the throttle -----------------------------------------------------------------


def test_a_key_fails_freely_five_times_then_waits_twice_as_long_each_time() -> None:
    clock = Clock()
    throttle = SignInThrottle(clock=clock)
    for _ in range(FREE_FAILURES - 1):
        assert throttle.begin(["k"]) == 0.0
        assert throttle.failed(["k"]) == 0.0
    waits = []
    for _ in range(12):
        assert throttle.begin(["k"]) == 0.0
        waits.append(throttle.failed(["k"]))
        assert throttle.begin(["k"]) == waits[-1]  # refused, and not counted
        clock.now += waits[-1]
    assert waits[:5] == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert waits[-1] == MAX_DELAY_S and waits == sorted(waits)


def test_an_attempt_counts_as_failed_from_its_start_until_it_signs_in() -> None:
    clock = Clock()
    throttle = SignInThrottle(clock=clock)
    # Five guesses at once: each starts before any has failed.
    assert [throttle.begin(["user a", "address x"]) for _ in range(FREE_FAILURES)] == [0.0] * 5
    assert throttle.begin(["user b", "address x"]) == 1.0  # the address waits already
    throttle.succeeded("user a", ["address x"])  # one of them was right after all
    assert throttle.begin(["user a", "address x"]) == 0.0


def test_a_success_forgets_the_users_failures_but_not_the_addresses() -> None:
    clock = Clock()
    throttle = SignInThrottle(clock=clock)
    for user in ("user a", "user b", "user c", "user d"):
        throttle.begin([user, "address x"])
        throttle.failed([user, "address x"])
    throttle.begin(["user a", "address x"])
    throttle.succeeded("user a", ["address x"])
    throttle.begin(["user e", "address x"])
    assert throttle.failed(["user e", "address x"]) == 1.0  # the fifth failure of the address


def test_keys_are_forgotten_after_an_hour_quiet_and_never_exceed_the_capacity() -> None:
    clock = Clock()
    throttle = SignInThrottle(clock=clock, capacity=3)
    for key in "abcdef":
        throttle.begin([key])
    assert len(throttle._keys) == 3 and set(throttle._keys) == {"d", "e", "f"}
    for _ in range(10):
        throttle.begin(["g"])
        throttle.failed(["g"])
        clock.now += MAX_DELAY_S
    clock.now += 3600
    assert throttle.begin(["g"]) == 0.0 and throttle._keys["g"].count == 1


# -- the authenticator ------------------------------------------------------------


def test_twenty_wrong_passwords_from_one_address_check_five_and_are_refused_429() -> None:
    clock = Clock()
    authenticator, checks = signing_in(clock)
    answers = [sign_in(authenticator, "alice", f"guess {n}", GUESSER) for n in range(20)]
    assert answers[:FREE_FAILURES] == [None] * FREE_FAILURES
    limited = answers[FREE_FAILURES:]
    assert all(isinstance(answer, Refused) and answer.status == 429 for answer in limited)
    assert {answer.retry_after_s for answer in limited if isinstance(answer, Refused)} == {1}
    assert len(checks.names) == FREE_FAILURES  # a limited attempt checked nothing
    # Bob, from the same address, waits too; from another, he signs in.
    assert isinstance(sign_in(authenticator, "bob", BOB, GUESSER), Refused)
    assert sign_in(authenticator, "bob", BOB, OFFICE) == Identity("bob", False, "basic")
    clock.now += 1
    assert sign_in(authenticator, "bob", BOB, GUESSER) == Identity("bob", False, "basic")


def test_a_guessed_user_waits_whatever_address_the_guesses_come_from() -> None:
    clock = Clock()
    authenticator, _ = signing_in(clock)
    for n in range(FREE_FAILURES):
        assert sign_in(authenticator, "alice", "guess", f"192.0.2.{n}") is None
    refused = sign_in(authenticator, "alice", ALICE, "192.0.2.200")
    assert isinstance(refused, Refused) and refused.status == 429
    assert "try again in 1 s" in refused.message and "\n" not in refused.message
    assert sign_in(authenticator, "bob", BOB, "192.0.2.200") == Identity("bob", False, "basic")
    # An unknown name is counted like a known one: the limit names nobody.
    for n in range(FREE_FAILURES):
        assert sign_in(authenticator, "mallory", "guess", f"192.0.2.{n}") is None
    assert isinstance(sign_in(authenticator, "mallory", "guess", "192.0.2.200"), Refused)


def test_a_burst_of_guesses_cannot_hold_up_someone_elses_first_sign_in() -> None:
    """Twenty guesses and Bob's first sign-in, all at once: the guesser's
    limited attempts are refused before they queue for the one scrypt at a
    time, so Bob's check waits behind five at most."""
    clock = Clock()
    authenticator, checks = signing_in(clock)
    answers: dict[str, object] = {}

    async def attempt(name: str, user: str, password: str, network: str) -> None:
        answers[name] = await authenticator.identify(basic(user, password), network, network)

    async def burst() -> None:
        async with anyio.create_task_group() as tasks:
            for n in range(20):
                tasks.start_soon(attempt, f"guess {n}", "alice", f"guess {n}", GUESSER)
            tasks.start_soon(attempt, "bob", "bob", BOB, OFFICE)

    anyio.run(burst)
    assert answers["bob"] == Identity("bob", False, "basic")
    assert len(checks.names) == FREE_FAILURES + 1 and "bob" in checks.names
    refused = [answer for answer in answers.values() if isinstance(answer, Refused)]
    assert len(refused) == 20 - FREE_FAILURES


def test_a_page_load_checks_the_password_once_and_again_only_after_the_cache_time() -> None:
    clock = Clock()
    authenticator, checks = signing_in(clock)
    for _ in range(10):  # a page, its style sheet, its script, its refreshes
        assert sign_in(authenticator, "alice", ALICE, OFFICE) == Identity("alice", True, "basic")
    assert checks.names == ["alice"]
    clock.now += CACHE_FOR_S
    assert sign_in(authenticator, "alice", ALICE, OFFICE) == Identity("alice", True, "basic")
    assert checks.names == ["alice", "alice"]
    assert sign_in(authenticator, "alice", ALICE + " ", OFFICE) is None  # never a near miss


def test_a_changed_password_or_users_file_is_never_served_from_the_cache() -> None:
    clock = Clock()
    authenticator, checks = signing_in(clock)
    assert sign_in(authenticator, "alice", ALICE, OFFICE) == Identity("alice", True, "basic")
    authenticator.policy = AccessPolicy(accounts=accounts(alice="alice's new passphrase"))
    assert sign_in(authenticator, "alice", ALICE, OFFICE) is None
    assert checks.names == ["alice", "alice"]  # checked against the new line
    assert sign_in(authenticator, "alice", "alice's new passphrase", OFFICE) is not None
    authenticator.policy = AccessPolicy(accounts={"bob": accounts()["bob"]})  # alice removed
    assert sign_in(authenticator, "alice", "alice's new passphrase", OFFICE) is None


def test_the_cache_holds_no_password() -> None:
    cache = VerifiedCache()
    account = accounts()["alice"]
    cache.remember(account, cache.digest(account, ALICE))
    held = repr(vars(cache)).encode()
    assert ALICE.encode() not in held and b"passphrase" not in held


# -- the proxy's header -------------------------------------------------------------


def test_a_user_header_sent_twice_by_a_trusted_proxy_is_refused() -> None:
    policy = AccessPolicy(
        proxy_header="x-forwarded-user",
        proxy_operators=frozenset({"ops"}),
        forwarded_allow=networks(["10.0.0.7"]),
    )
    authenticator = Authenticator(policy)
    twice = Headers(raw=[(b"x-forwarded-user", b"vera"), (b"x-forwarded-user", b"ops")])
    refused = run(lambda: authenticator.identify(twice, "10.0.0.7", "10.0.0.7"))
    assert isinstance(refused, Refused) and refused.status == 400
    assert "x-forwarded-user header is there 2 times" in refused.message
    once = Headers(raw=[(b"x-forwarded-user", b"ops")])
    assert run(lambda: authenticator.identify(once, "10.0.0.7", "10.0.0.7")) == Identity(
        "ops", True, "proxy"
    )
    # From a peer that is no proxy, the header is nobody's word at all.
    assert run(lambda: authenticator.identify(twice, "192.0.2.1", "192.0.2.1")) is None


# -- addresses ----------------------------------------------------------------------


def test_a_limit_counts_the_forwarded_client_and_an_ipv6_client_by_its_64() -> None:
    nobody = AccessPolicy()
    assert client_network(nobody, "192.0.2.7", "203.0.113.9") == "192.0.2.7"
    assert client_network(nobody, "2001:db8:1:2:aa::1", None) == "2001:db8:1:2::/64"
    assert client_network(nobody, "::ffff:192.0.2.7", None) == "192.0.2.7"
    assert client_network(nobody, None, None) == "?"
    proxied = AccessPolicy(forwarded_allow=networks(["10.0.0.0/8"]))
    assert client_network(proxied, "10.0.0.2", "1.1.1.1, 203.0.113.9, 10.0.0.3") == "203.0.113.9"
    assert client_network(proxied, "10.0.0.2", "x\nforged") == "10.0.0.2"
    assert client_address(proxied, "10.0.0.2", "x\nforged") == (
        "10.0.0.2 (forwarding an unreadable address)"
    )


# -- passwords and secrets ----------------------------------------------------------


@pytest.mark.parametrize("password", ["", "abc", "x" * (MIN_PASSWORD - 1)])
def test_a_password_shorter_than_twelve_characters_is_refused(password: str) -> None:
    with pytest.raises(AccountError, match=f"at least {MIN_PASSWORD}") as refused:
        hash_line("alice", "viewer", password)
    assert password == "" or password not in str(refused.value)
    assert parse_line(hash_line("alice", "viewer", "x" * MIN_PASSWORD)).matches("x" * MIN_PASSWORD)


def test_a_configured_secret_is_long_enough_and_never_quoted() -> None:
    with pytest.raises(ValueError) as refused:
        configured_secret("too short\n", "secret.txt")
    assert str(refused.value) == "secret.txt holds 9 characters: give at least 32"
    assert configured_secret(" " + "s" * 44 + "\n", "x") == b"s" * 44


def test_replicas_given_one_secret_accept_each_others_tokens_for_their_hub_only() -> None:
    shared = configured_secret("a secret two replicas share, 44 chars long..", "x")
    one, two = (
        Confirmations(secret=hub_secret(shared, "orders")),
        Confirmations(secret=hub_secret(shared, "orders")),
    )
    target = {"instance_id": "order-1"}
    two.redeem(one.issue("cancel", target, "alice"), "cancel", target, "alice")
    csrf = CsrfTokens(hub_secret(shared, "orders")).issue()
    assert CsrfTokens(hub_secret(shared, "orders")).valid(csrf, csrf)
    other_hub = Confirmations(secret=hub_secret(shared, "billing"))
    with pytest.raises(TokenRefused, match="not one this server gave"):
        other_hub.redeem(one.issue("cancel", target, "alice"), "cancel", target, "alice")
    assert not CsrfTokens(hub_secret(shared, "billing")).valid(csrf, csrf)
