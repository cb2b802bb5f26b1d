"""The two tokens an action's POSTs carry, both signed with a secret: one of
this server process (`secrets`), so that a restart voids every token, or the
one configured for it (`configured_secret`), which dashboard replicas behind
one load balancer share, so that each accepts the others' tokens.

- The page's CSRF token, also in a SameSite=Strict cookie: the first POST
  (the question) must come from one of this server's pages.
- The confirmation: what the question page hands back, bound to one action,
  its target (the form's fields), the user, and a deadline; good once. Only
  a POST carrying it acts, so a client that skips the question (`curl` with
  `confirmed=yes`) changes nothing.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Mapping

CONFIRM_WITHIN_S = 120.0
# A configured secret's length: `openssl rand -base64 32` writes 44.
MIN_SECRET = 32


class TokenRefused(Exception):
    """The confirmation is not good for this: `reason` says why."""


class CsrfTokens:
    """A nonce signed with this process's secret: only a page this server
    rendered can carry one."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def issue(self) -> str:
        nonce = secrets.token_urlsafe(16)
        return f"{nonce}.{_sign(self._secret, 'csrf', nonce)}"

    def valid(self, cookie: str | None, form: str | None) -> bool:
        """The form's token is the cookie's, and this server signed it."""
        if not cookie or not form or not (cookie.isascii() and form.isascii()):
            return False  # compare_digest takes ASCII text only
        if not hmac.compare_digest(cookie, form):
            return False
        nonce, _, signature = form.partition(".")
        return bool(nonce) and hmac.compare_digest(signature, _sign(self._secret, "csrf", nonce))


class Confirmations:
    def __init__(
        self,
        within_s: float = CONFIRM_WITHIN_S,
        clock: Callable[[], float] = time.time,
        secret: bytes | None = None,
    ) -> None:
        self._secret = secret or secrets.token_bytes(32)
        self._within_s, self._clock = within_s, clock
        self._spent: dict[str, float] = {}  # nonce -> deadline, while it could still be used
        self._lock = threading.Lock()

    def issue(self, action: str, target: Mapping[str, str], user: str) -> str:
        claims = {
            "action": action,
            "target": _digest(target),
            "user": user,
            "until": round(self._clock() + self._within_s, 3),
            "nonce": secrets.token_urlsafe(12),
        }
        body = base64.urlsafe_b64encode(json.dumps(claims, sort_keys=True).encode()).decode()
        return f"{body}.{_sign(self._secret, 'confirm', body)}"

    def redeem(self, token: str, action: str, target: Mapping[str, str], user: str) -> None:
        """Spend the token on this action, target and user, or TokenRefused."""
        body, _, signature = token.partition(".")
        signed = token.isascii() and bool(body)  # compare_digest takes ASCII text only
        if not signed or not hmac.compare_digest(signature, _sign(self._secret, "confirm", body)):
            raise TokenRefused("the confirmation is not one this server gave")
        claims = json.loads(base64.urlsafe_b64decode(body))  # signed by us: well formed
        if claims["action"] != action or not hmac.compare_digest(claims["target"], _digest(target)):
            raise TokenRefused("the confirmation was given for another action or target")
        if claims["user"] != user:
            raise TokenRefused("the confirmation was given to another user")
        now = self._clock()
        if claims["until"] < now:
            raise TokenRefused(f"the confirmation expired (it lasts {self._within_s:.0f} s)")
        with self._lock:
            self._spent = {nonce: until for nonce, until in self._spent.items() if until >= now}
            if claims["nonce"] in self._spent:
                raise TokenRefused("the confirmation was used already")
            self._spent[claims["nonce"]] = float(claims["until"])


def configured_secret(text: str, source: str) -> bytes:
    """A secret as a file or a variable holds it (the whitespace around it,
    a file's last newline, is no part of it); ValueError naming `source`,
    never quoting the text."""
    secret = text.strip()
    if len(secret) < MIN_SECRET:
        raise ValueError(f"{source} holds {len(secret)} characters: give at least {MIN_SECRET}")
    return secret.encode()


def hub_secret(secret: bytes, schema: str) -> bytes:
    """The key a hub's dashboards sign with: a token for one hub is no
    token for another, should two share a configured secret."""
    return hmac.new(secret, f"taskhub-pg dashboard\0{schema}".encode(), hashlib.sha256).digest()


def _sign(secret: bytes, purpose: str, text: str) -> str:
    # The purpose is signed too: a CSRF token is never a confirmation.
    return hmac.new(secret, f"{purpose}\0{text}".encode(), hashlib.sha256).hexdigest()


def _digest(target: Mapping[str, str]) -> str:
    canonical = json.dumps(sorted(target.items()), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
