"""The dashboard's sign-in parts without a server: the users file's lines
(provider/dashboard/passwords.py), the rules that read a request's headers
(access.py) and the confirmation tokens (tokens.py)."""

from __future__ import annotations

import base64

import pytest

from provider.dashboard.access import (
    AccessPolicy,
    basic_credentials,
    client_address,
    is_loopback,
    networks,
)
from provider.dashboard.passwords import AccountError, hash_line, parse_line, read_accounts
from provider.dashboard.tokens import Confirmations, CsrfTokens, TokenRefused
from provider.host_headers import host_name


def test_a_hashed_line_matches_its_password_only_and_holds_no_trace_of_it() -> None:
    line = hash_line("alice", "operator", "correct horse")
    assert "correct horse" not in line and line.startswith("alice:operator:scrypt$")
    account = parse_line(line)
    assert account.matches("correct horse") and account.may_act
    assert not account.matches("correct horse ") and not account.matches("")
    again = parse_line(hash_line("alice", "operator", "correct horse"))
    assert again.salt != account.salt and again.key != account.key  # a salt of its own
    assert "correct horse" not in repr(account) and repr(account.key) not in repr(account)


@pytest.mark.parametrize(
    "line, words",
    [
        ("alice:operator:hunter2", "the hash is scrypt$N$r$p$SALT$KEY"),
        ("alice:hunter2", "an account line is NAME:ROLE:HASH"),
        ("alice:admin:scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", "role"),
        ("al ice:viewer:scrypt$32768$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", "name"),
        ("alice:viewer:scrypt$1024$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAA", "N is"),
        ("alice:viewer:scrypt$32768$8$1$AAAA$AAAAAAAAAAAAAAAAAAAAAA", "salt"),
        ("alice:viewer:scrypt$32768$8$1$hunter2!$AAAAAAAAAAAAAAAAAAAAAA", "base64"),
    ],
)
def test_a_line_that_is_no_account_is_refused_without_being_quoted(line: str, words: str) -> None:
    """A password pasted in place of its hash must not reach a terminal or a log."""
    with pytest.raises(AccountError) as refused:
        read_accounts(f"# users\n\n{line}\n", "users.txt")
    message = str(refused.value)
    assert message.startswith("users.txt line 3: ") and words in message
    assert "hunter2" not in message and "AAAA" not in message


def test_a_user_named_twice_is_refused() -> None:
    line = hash_line("bob", "viewer", "bob's passphrase")
    with pytest.raises(AccountError, match="line 2: user 'bob' is there twice"):
        read_accounts(f"{line}\n{line}\n", "users.txt")


def test_basic_credentials_are_read_only_from_a_well_formed_header() -> None:
    def basic(text: bytes) -> str:
        return "Basic " + base64.b64encode(text).decode()

    assert basic_credentials(basic(b"alice:pa:ss")) == ("alice", "pa:ss")
    assert basic_credentials(basic("j\u00f6rg:pw".encode())) == ("j\u00f6rg", "pw")
    for header in (None, "", "Bearer x", "Basic !!!", basic(b"nocolon"), basic(b":pw")):
        assert basic_credentials(header) is None
    assert basic_credentials(basic(b"\xff:pw")) is None  # not UTF-8


def test_host_names_are_read_without_their_port() -> None:
    assert host_name("127.0.0.1:8080") == "127.0.0.1"
    assert host_name("LOCALHOST") == "localhost"
    assert host_name("[::1]:8080") == "::1"
    assert host_name("dash.example.com.") == "dash.example.com"
    for bad in (None, "", "evil.example:80:80", "[::1", "a b", "host:port", "\u00e9vil.example"):
        assert host_name(bad) is None
    policy = AccessPolicy()
    assert policy.host_allowed("localhost:9000") and policy.host_allowed("[::1]")
    assert not policy.host_allowed("evil.example") and not policy.host_allowed(None)


def test_only_loopback_addresses_count_as_this_machine_only() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "10.0.0.5", "192.0.2.1", "dash.example.com", ""):
        assert not is_loopback(host), host


def test_forwarded_headers_are_believed_from_the_configured_proxies_only() -> None:
    nobody = AccessPolicy()
    assert client_address(nobody, "127.0.0.1", "203.0.113.9") == "127.0.0.1"
    proxied = AccessPolicy(forwarded_allow=networks(["10.0.0.0/8, 127.0.0.1"]))
    assert client_address(proxied, "127.0.0.1", "203.0.113.9") == "203.0.113.9 (via 127.0.0.1)"
    # A client may prepend anything: the proxy appends the address it saw.
    assert (
        client_address(proxied, "127.0.0.1", "1.1.1.1, 203.0.113.9, 10.0.0.2")
        == "203.0.113.9 (via 127.0.0.1)"
    )
    assert client_address(proxied, "192.0.2.7", "203.0.113.9") == "192.0.2.7"
    assert "unreadable" in client_address(proxied, "127.0.0.1", "x\nforged")
    with pytest.raises(ValueError, match="'nowhere' is no IP address or network"):
        networks(["127.0.0.1,nowhere"])


def test_a_proxy_user_is_an_operator_only_when_listed() -> None:
    policy = AccessPolicy(proxy_header="x-forwarded-user", proxy_operators=frozenset({"ops"}))
    operator = policy.proxy_identity("ops")
    assert operator is not None and operator.may_act and operator.via == "proxy"
    viewer = policy.proxy_identity("someone")
    assert viewer is not None and not viewer.may_act
    for bad in (None, "", " ", "a\nb", "x" * 500):
        assert policy.proxy_identity(bad) is None


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_a_confirmation_is_good_once_for_its_action_target_and_user_until_it_expires() -> None:
    clock = Clock()
    confirmations = Confirmations(within_s=120, clock=clock)
    target = {"instance_id": "order-1"}
    token = confirmations.issue("delete", target, "alice")
    for action, other_target, user, words in (
        ("cancel", target, "alice", "another action or target"),
        ("delete", {"instance_id": "order-2"}, "alice", "another action or target"),
        ("delete", {"instance_id": "order-1", "force": "yes"}, "alice", "another action"),
        ("delete", target, "bob", "another user"),
    ):
        with pytest.raises(TokenRefused, match=words):
            confirmations.redeem(token, action, other_target, user)
    confirmations.redeem(token, "delete", target, "alice")
    with pytest.raises(TokenRefused, match="used already"):
        confirmations.redeem(token, "delete", target, "alice")

    late = confirmations.issue("delete", target, "alice")
    clock.now += 121
    with pytest.raises(TokenRefused, match="expired"):
        confirmations.redeem(late, "delete", target, "alice")


def test_a_token_this_process_did_not_sign_is_refused() -> None:
    mine, theirs = Confirmations(), Confirmations()
    token = theirs.issue("prune", {"older_than_days": "0"}, "alice")
    for forged in (token, token + "0", "", ".", "\u00e9.x", token.split(".")[0] + ".00"):
        with pytest.raises(TokenRefused, match="not one this server gave"):
            mine.redeem(forged, "prune", {"older_than_days": "0"}, "alice")
    csrf = CsrfTokens()
    issued = csrf.issue()
    assert csrf.valid(issued, issued)
    assert not CsrfTokens().valid(issued, issued)
    assert not csrf.valid(issued, None) and not csrf.valid("\u00e9", "\u00e9")
    # A CSRF token is never a confirmation, whatever it is signed with.
    with pytest.raises(TokenRefused):
        mine.redeem(issued, "prune", {}, "alice")
