"""The dashboard as an attacker meets it (issue 36): sign-in, the Host
allowlist, same-origin POSTs, the security headers, the server-side
confirmation, requests refused before their bodies are read, bad parameters,
and the audit log. Against a real hub, through Starlette's TestClient; the
framing check is in the browser (test_dashboard_browser.py) and the command
line's in test_dashboard_command.py."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from provider.dashboard.access import AccessPolicy, networks
from provider.dashboard.app import dashboard_app
from provider.dashboard.passwords import Account, hash_line, read_accounts
from tests.support.dashboard import FORM, LOCAL, ask, basic, confirm, confirmation_of, token_of

PASSWORDS = {"alice": "alice's secret", "bob": "bob's secret", "vera": "vera's secret"}
ROLES = {"alice": "operator", "bob": "operator", "vera": "viewer"}
PAGES = ("/", "/panels/overview", "/instances", "/instances/quiet", "/dead-letters")
SECURITY_HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@pytest.fixture(scope="module")
def accounts() -> dict[str, Account]:
    lines = "\n".join(hash_line(name, ROLES[name], PASSWORDS[name]) for name in PASSWORDS)
    return read_accounts(lines, "the test's users")


def signed_in(user: str) -> dict[str, str]:
    return basic(user, PASSWORDS[user])


@pytest.fixture
def guarded(database_url: str, busy_hub: str, accounts: dict[str, Account]) -> Iterator[TestClient]:
    """The dashboard with actions on and basic auth; no credentials sent by default."""
    app = dashboard_app(
        database_url, busy_hub, allow_actions=True, access=AccessPolicy(accounts=accounts)
    )
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client


def as_user(client: TestClient, user: str) -> TestClient:
    client.headers.update(signed_in(user))
    return client


def dead_letters(sql: psycopg.Connection[Any], schema: str) -> int:
    row = sql.execute(f'SELECT count(*) FROM "{schema}".dead_letters').fetchone()
    assert row is not None
    return int(row[0])


def the_dead_letter(sql: psycopg.Connection[Any], schema: str) -> str:
    row = sql.execute(f'SELECT id FROM "{schema}".dead_letters').fetchone()
    assert row is not None, "the busy hub has one dead letter"
    return str(row[0])


def assert_one_line(text: str) -> None:
    assert text.strip() and "\n" not in text.strip(), text
    assert "Traceback" not in text


# -- sign-in (High: no authentication) ------------------------------------------


def test_without_credentials_every_page_and_file_is_401_asking_for_basic_auth(
    guarded: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    for path in (*PAGES, "/static/refresh.js", "/no-such-page"):
        answer = guarded.get(path)
        assert answer.status_code == 401, (path, answer.status_code)
        assert answer.headers["www-authenticate"].startswith('Basic realm="taskhub-pg')
        assert "quiet" not in answer.text and "stuck-instance" not in answer.text
    refused = guarded.post(
        "/actions/requeue",
        data={"dead_letter_id": the_dead_letter(sql, busy_hub), "confirmed": "yes"},
    )
    assert refused.status_code == 401
    assert dead_letters(sql, busy_hub) == 1


def test_a_wrong_password_or_user_is_401_and_logged_without_the_password(
    guarded: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="provider.dashboard"):
        for user, password in (("alice", "guess"), ("mallory", "alice's secret"), ("alice", "")):
            answer = guarded.get("/", headers=basic(user, password))
            assert answer.status_code == 401, (user, password)
        assert guarded.get("/", headers={"Authorization": "Basic !!!"}).status_code == 401
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "'alice'" in logged and "'mallory'" in logged
    assert "guess" not in logged and "alice's secret" not in logged
    assert guarded.get("/", headers=signed_in("alice")).status_code == 200


def test_a_viewer_reads_every_page_but_is_offered_no_action_and_may_take_none(
    guarded: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    vera = as_user(guarded, "vera")
    for path in PAGES:
        page = vera.get(path)
        assert page.status_code == 200, path
        assert '<form method="post"' not in page.text, path
    assert 'id="user">vera<' in vera.get("/").text
    vera.cookies.set("taskhub_csrf", "x.y")
    refused = vera.post(
        "/actions/requeue",
        data={"dead_letter_id": the_dead_letter(sql, busy_hub), "csrf_token": "x.y"},
    )
    assert refused.status_code == 403 and "vera may only read" in refused.text
    assert dead_letters(sql, busy_hub) == 1


def test_an_operator_acts_through_the_question_and_its_confirmation(
    guarded: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    alice = as_user(guarded, "alice")
    fields = {"dead_letter_id": the_dead_letter(sql, busy_hub)}
    asked = ask(alice, "requeue", fields, "/dead-letters")
    assert asked.status_code == 200 and 'id="question"' in asked.text
    assert dead_letters(sql, busy_hub) == 1  # the question changes nothing
    done = confirm(alice, "requeue", fields, asked.text)
    assert done.status_code == 200 and "is back on its queue" in done.text
    assert dead_letters(sql, busy_hub) == 0


def test_a_client_that_skips_the_question_changes_nothing(
    guarded: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    """The issue's curl: GET a page for the cookie and the token, POST
    `confirmed=yes`. Only a confirmation from the server acts."""
    alice = as_user(guarded, "alice")
    token = token_of(alice.get("/dead-letters").text)
    fields = {"dead_letter_id": the_dead_letter(sql, busy_hub), "csrf_token": token}
    for extra in ({"confirmed": "yes"}, {"confirmation": "yes"}, {"confirmation": token}):
        answer = alice.post("/actions/requeue", data={**fields, **extra})
        assert answer.status_code in (400, 403), (extra, answer.status_code)
        assert "Nothing changed" in answer.text
    assert dead_letters(sql, busy_hub) == 1


def test_a_confirmation_acts_once_for_its_user_and_target_only(
    guarded: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    alice = as_user(guarded, "alice")
    fields = {"instance_id": "quiet"}
    asked = ask(alice, "cancel", fields, "/instances/quiet").text
    confirmation, token = confirmation_of(asked), token_of(asked)

    def post(user: str, form: dict[str, str]) -> Any:
        return guarded.post(
            "/actions/cancel",
            data={**form, "csrf_token": token, "confirmation": confirmation},
            headers=signed_in(user),
        )

    assert post("bob", fields).status_code == 403  # another operator
    assert post("alice", {"instance_id": "leased-instance"}).status_code == 403  # another target
    assert post("alice", {**fields, "reason": "not asked"}).status_code == 403
    cancels = (
        f'SELECT count(*) FROM "{busy_hub}".orchestrator_queue'
        " WHERE work_item LIKE '{\"CancelInstance\"%'"
    )
    assert sql.execute(cancels).fetchone() == (0,)
    assert post("alice", fields).status_code == 200
    assert post("alice", fields).status_code == 403  # good once
    assert sql.execute(cancels).fetchone() == (1,)


def test_a_trusted_proxy_names_the_user_and_nobody_else_may(
    database_url: str, busy_hub: str, sql: psycopg.Connection[Any]
) -> None:
    policy = AccessPolicy(
        proxy_header="x-forwarded-user",
        proxy_operators=frozenset({"ops"}),
        forwarded_allow=networks(["127.0.0.1"]),
    )

    def reached_from(peer: str) -> TestClient:
        app = dashboard_app(database_url, busy_hub, allow_actions=True, access=policy)
        return TestClient(app, base_url=LOCAL, client=(peer, 40000))

    with reached_from("192.0.2.7") as stranger:
        answer = stranger.get("/", headers={"X-Forwarded-User": "ops"})
        assert answer.status_code == 403 and "quiet" not in answer.text
    with reached_from("127.0.0.1") as proxy:
        assert proxy.get("/").status_code == 403  # the proxy names nobody
        viewer = proxy.get("/dead-letters", headers={"X-Forwarded-User": "someone"})
        assert viewer.status_code == 200 and '<form method="post"' not in viewer.text
        proxy.headers.update({"X-Forwarded-User": "ops"})
        fields = {"dead_letter_id": the_dead_letter(sql, busy_hub)}
        asked = ask(proxy, "requeue", fields, "/dead-letters")
        assert confirm(proxy, "requeue", fields, asked.text).status_code == 200
    assert dead_letters(sql, busy_hub) == 0


# -- Host, origin, headers (Medium) ---------------------------------------------


def test_a_foreign_host_is_400_before_any_page_redirect_or_file(
    database_url: str, busy_hub: str
) -> None:
    """A DNS-rebinding page reaches the server under its own name."""
    app = dashboard_app(database_url, busy_hub, allow_actions=True)
    with TestClient(app, base_url="http://evil.example", follow_redirects=False) as client:
        for path in (*PAGES, "/dead-letters/", "/static/dashboard.css"):
            answer = client.get(path)
            assert answer.status_code == 400, (path, answer.status_code)
            assert "evil.example" not in answer.headers.get("location", "")
            assert "quiet" not in answer.text and "--allowed-host" in answer.text
        assert client.post("/actions/prune", data={"older_than_days": "0"}).status_code == 400


def test_no_redirect_or_url_carries_the_requests_host(database_url: str, busy_hub: str) -> None:
    policy = AccessPolicy(allowed_hosts=frozenset({"127.0.0.1", "dash.example.com"}))
    app = dashboard_app(database_url, busy_hub, access=policy)
    with TestClient(app, base_url="http://dash.example.com", follow_redirects=False) as client:
        for path in PAGES:
            page = client.get(path)
            assert page.status_code == 200, path
            assert not re.search(r'(href|src|action)="[a-z]+://', page.text), path
        slash = client.get("/dead-letters/")
        assert slash.status_code == 404 and "location" not in slash.headers


def test_a_post_from_another_origin_or_site_is_refused_and_changes_nothing(
    database_url: str, busy_hub: str, sql: psycopg.Connection[Any]
) -> None:
    app = dashboard_app(database_url, busy_hub, allow_actions=True)
    with TestClient(app, base_url=LOCAL) as client:
        token = token_of(client.get("/dead-letters").text)
        fields = {
            "dead_letter_id": the_dead_letter(sql, busy_hub),
            "csrf_token": token,
            "confirmed": "yes",
        }
        for headers in (
            {"Origin": "http://evil.example"},
            {"Origin": "http://127.0.0.1:9999"},  # another port of the same host
            {"Origin": "null"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "same-site"},
            {"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "cross-site"},
        ):
            answer = client.post("/actions/requeue", data=fields, headers=headers)
            assert answer.status_code == 403, (headers, answer.status_code)
        same = {"Origin": LOCAL, "Sec-Fetch-Site": "same-origin"}
        del fields["confirmed"]
        asked = client.post("/actions/requeue", data=fields, headers=same)
        assert asked.status_code == 200 and 'id="question"' in asked.text  # our own page's
    assert dead_letters(sql, busy_hub) == 1


def test_every_response_carries_the_security_headers(
    database_url: str, busy_hub: str, accounts: dict[str, Account], sql: psycopg.Connection[Any]
) -> None:
    """Pages, files, refusals, 404s and a 500 alike."""
    app = dashboard_app(
        database_url, busy_hub, allow_actions=True, access=AccessPolicy(accounts=accounts)
    )
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        alice = signed_in("alice")
        answers = {
            "page": client.get("/", headers=alice),
            "file": client.get("/static/dashboard.css", headers=alice),
            "bad filter": client.get("/instances?status=Done", headers=alice),
            "404": client.get("/no-such-page", headers=alice),
            "401": client.get("/"),
            "foreign host": client.get("/", headers={"Host": "evil.example", **alice}),
            "refused post": client.post("/actions/requeue", headers=alice, content=b""),
        }
        sql.execute(f'DROP VIEW "{busy_hub}".taskhub_queue_health CASCADE')
        answers["500"] = client.get("/", headers=alice)
    assert answers["500"].status_code == 500
    for what, answer in answers.items():
        for name, value in SECURITY_HEADERS.items():
            assert answer.headers.get(name) == value, (what, name, answer.headers.get(name))
        policy = answer.headers.get("content-security-policy", "")
        assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy, what


# -- bodies, parameters (Low) ---------------------------------------------------


class BodyMeter:
    """The app, counting the body bytes it takes from the client."""

    def __init__(self, app: ASGIApp) -> None:
        self.app, self.read = app, 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def metered() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                self.read += len(message.get("body", b""))
            return message

        await self.app(scope, metered, send)


def test_a_post_is_refused_on_its_headers_before_its_body_is_read(
    database_url: str, busy_hub: str, accounts: dict[str, Account]
) -> None:
    thirty_mb = {"upload": ("big.bin", b"x" * (30 << 20), "application/octet-stream")}
    read_only = BodyMeter(dashboard_app(database_url, busy_hub))
    with TestClient(read_only, base_url=LOCAL) as client:
        answer = client.post("/actions/requeue", files=thirty_mb)
        assert answer.status_code == 403 and "--allow-actions" in answer.text
    assert read_only.read == 0, "actions off: the 30 MB file part was read"

    policy = AccessPolicy(accounts=accounts)
    acting = BodyMeter(dashboard_app(database_url, busy_hub, allow_actions=True, access=policy))
    with TestClient(acting, base_url=LOCAL) as client:
        assert client.post("/actions/requeue", files=thirty_mb).status_code == 401
        client.headers.update(signed_in("alice"))
        assert client.post("/actions/requeue", data={"dead_letter_id": "1"}).status_code == 403
        assert acting.read == 0, "no cookie: the form was read"
        token = token_of(client.get("/dead-letters").text)  # the cookie
        big = {"dead_letter_id": "1", "csrf_token": token, "pad": "x" * 9000}
        for status, request in (
            (415, {"files": thirty_mb, "data": {"csrf_token": token}}),
            (415, {"content": b"dead_letter_id=1", "headers": {"Content-Type": "text/plain"}}),
            (415, {"json": {"dead_letter_id": 1, "csrf_token": token}}),
            (413, {"data": big}),
            (411, {"content": iter([b"dead_letter_id=1"]), "headers": {"Content-Type": FORM}}),
        ):
            answer = client.post("/actions/requeue", **request)
            assert answer.status_code == status, (request.get("headers"), answer.text)
            assert "Nothing changed" in answer.text
        assert acting.read == 0, "a form refused on its headers was read"


def test_bad_parameters_are_400_with_one_line_never_500(
    guarded: TestClient, sql: psycopg.Connection[Any], busy_hub: str
) -> None:
    alice = as_user(guarded, "alice")
    for path in (
        "/instances/quiet%00",
        "/instances?name=%00",
        "/instances?after=quiet%00",
        "/instances?status=Running%00",
        "/instances?started_after=2026-01-01%00",
        "/?x=%00",
    ):
        answer = alice.get(path)
        assert answer.status_code == 400, (path, answer.status_code)
        assert_one_line(answer.text)
    token = token_of(alice.get("/").text)
    for fields in (
        {"dead_letter_id": "\u00b2"},  # '²'.isdigit() is true, int('²') raises
        {"dead_letter_id": "1\x00"},
        {"dead_letter_id": "1", "csrf_token": token},  # a field twice
    ):
        body = "&".join(f"{k}={v}" for k, v in {"csrf_token": token}.items())
        body += "".join(f"&{k}={quote(v, safe='')}" for k, v in fields.items())
        answer = alice.post(
            "/actions/requeue", content=body.encode(), headers={"Content-Type": FORM}
        )
        assert answer.status_code == 400, (fields, answer.status_code)
        assert "Nothing changed" in answer.text and 'id="question"' not in answer.text
    raw = alice.post("/actions/requeue", content=b"csrf_token=%ff", headers={"Content-Type": FORM})
    assert raw.status_code == 400
    assert dead_letters(sql, busy_hub) == 1


def test_a_stale_next_page_link_ends_the_list(guarded: TestClient, busy_hub: str) -> None:
    """`after` names an instance deleted or pruned since the page was made."""
    page = as_user(guarded, "vera").get("/instances", params={"after": "deleted-since"})
    assert page.status_code == 200 and "no instance matches" in page.text
    assert "data-instance" not in page.text


# -- the audit log (Low) --------------------------------------------------------


def test_the_audit_log_names_the_user_and_quotes_and_cuts_what_the_client_chose(
    guarded: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A newline in the action's name cannot start a forged line, a long
    value cannot flood the log, X-Forwarded-For is not believed unasked."""
    alice = as_user(guarded, "alice")
    alice.get("/")  # the session's cookie
    forged = {"csrf_token": "forged"}
    with caplog.at_level(logging.INFO, logger="provider.dashboard.actions"):
        alice.post(
            "/actions/requeue%0aINFO provider.dashboard.actions: 'prune' by 'root'",
            data={"dead_letter_id": "1", **forged},
        )
        alice.post("/actions/cancel", data={"instance_id": "q" * 1000, **forged})
        alice.post("/actions/cancel", data={"instance_id": "m" * (1 << 20), **forged})
        alice.post(
            "/actions/cancel",
            data={"instance_id": "quiet", **forged},
            headers={"X-Forwarded-For": "203.0.113.9"},
        )
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) == 4 and all("\n" not in line for line in lines), lines
    assert "requeue\\nINFO" in lines[0]
    assert all("by 'alice' from 'testclient'" in line for line in lines), lines
    assert all(len(line) < 1000 for line in lines), [len(line) for line in lines]
    assert "(1000 characters)" in lines[1]
    assert "203.0.113.9" not in lines[3]
    assert all("forged" not in line for line in lines)  # the tokens are not logged
