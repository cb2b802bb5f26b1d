"""Driving the dashboard's forms from a test client as a browser would: the
page's CSRF token, the question, the confirmation it hands back."""

from __future__ import annotations

import base64
import re
from typing import Any

from starlette.testclient import TestClient

# The dashboard answers to the loopback names only (a Host allowlist):
# TestClient's own "testserver" would be refused.
LOCAL = "http://127.0.0.1"
FORM = "application/x-www-form-urlencoded"


def basic(user: str, password: str) -> dict[str, str]:
    """The Authorization header of HTTP basic auth."""
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {encoded}"}


def token_of(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found, "no CSRF token in the page"
    return found.group(1)


def confirmation_of(html: str) -> str:
    found = re.search(r'name="confirmation" value="([^"]+)"', html)
    assert found, "no confirmation in the page"
    return found.group(1)


def ask(client: TestClient, name: str, fields: dict[str, str], page: str = "/") -> Any:
    """The first POST, from the form of a page: the question (or a refusal)."""
    token = token_of(client.get(page).text)
    return client.post(f"/actions/{name}", data={**fields, "csrf_token": token})


def confirm(client: TestClient, name: str, fields: dict[str, str], asked: str) -> Any:
    """The second POST, from the question's page: the act (or a refusal)."""
    return client.post(
        f"/actions/{name}",
        data={**fields, "csrf_token": token_of(asked), "confirmation": confirmation_of(asked)},
    )


def act(client: TestClient, name: str, fields: dict[str, str], page: str = "/") -> str:
    """The action as a person takes it: the form of a page, then its question."""
    asked = ask(client, name, fields, page)
    assert asked.status_code == 200 and 'id="question"' in asked.text, asked.text
    done = confirm(client, name, fields, asked.text)
    assert done.status_code == 200, done.text
    return str(done.text)
