"""Who a request is: the user a trusted proxy names, or HTTP basic auth
against the accounts, with the guesser's brake (throttle.py) in front of the
password check. The guard (guard.py) turns the answer into a response.

A password check is scrypt (~0.1 s, 32 MiB), one at a time per event loop.
An attempt its user or its address must still wait for is refused before
it queues for one, so a guesser cannot fill the queue everyone's first
sign-in waits in. Credentials that matched are remembered for CACHE_FOR_S
as an HMAC under a key of this process, never the password: the next
request of that user costs an HMAC, not a scrypt.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio.to_thread
from anyio import CapacityLimiter
from anyio.lowlevel import RunVar
from starlette.datastructures import Headers

from provider.dashboard.access import ANONYMOUS, AccessPolicy, Identity, basic_credentials
from provider.dashboard.passwords import Account, decoy
from provider.dashboard.throttle import SignInThrottle

log = logging.getLogger("provider.dashboard.access")

CACHE_FOR_S = 300.0
LIMITED = "too many failed sign-ins for this user or from this address: try again in {} s"
PROXY_HEADER_TWICE = "the {} header is there {} times: a request names one user"

# One password check at a time per event loop: a flood of wrong passwords
# queues up here instead of taking every thread.
_checks: RunVar[CapacityLimiter] = RunVar("taskhub_dashboard_password_checks")


@dataclass(frozen=True)
class Refused:
    """A request refused before anyone is signed in, and how."""

    status: int
    message: str
    retry_after_s: int | None = None


class VerifiedCache:
    """Credentials that matched lately, by user: an HMAC of the password
    and of the account's own hash, so a changed password or users file is a
    miss, never a stale match."""

    def __init__(self, for_s: float = CACHE_FOR_S, clock: Callable[[], float] = time.monotonic):
        self._key = secrets.token_bytes(32)
        self._for_s, self._clock = for_s, clock
        self._found: dict[str, tuple[bytes, float]] = {}  # names of accounts only: bounded

    def digest(self, account: Account, password: str) -> bytes:
        parts = (account.name, f"{account.n}${account.r}${account.p}", password)
        material = b"".join(
            len(part).to_bytes(4, "big") + part
            for part in (*(text.encode() for text in parts), account.salt, account.key)
        )
        return hmac.new(self._key, material, hashlib.sha256).digest()

    def holds(self, account: Account, digest: bytes) -> bool:
        found = self._found.get(account.name)
        if found is None or found[1] <= self._clock():
            return False
        return hmac.compare_digest(found[0], digest)

    def remember(self, account: Account, digest: bytes) -> None:
        self._found[account.name] = (digest, self._clock() + self._for_s)


class Authenticator:
    def __init__(
        self,
        policy: AccessPolicy,
        throttle: SignInThrottle | None = None,
        cache: VerifiedCache | None = None,
        check: Callable[[Account, str], bool] = Account.matches,
    ) -> None:
        self.policy = policy
        self.throttle = throttle or SignInThrottle()
        self.cache = cache or VerifiedCache()
        self._check = check
        self._decoy = decoy()

    async def identify(
        self, headers: Headers, peer: str | None, network: str
    ) -> Identity | Refused | None:
        """The signed-in user; Refused; None when nobody is signed in.
        `network` is the client a sign-in limit counts (client_network)."""
        policy = self.policy
        if policy.open:
            return ANONYMOUS
        if policy.proxy_header and policy.trusts(peer):
            named = headers.getlist(policy.proxy_header)
            if len(named) > 1:  # which one the proxy set is anyone's guess
                log.warning(
                    "a request from %s named %d users in %s",
                    network,
                    len(named),
                    policy.proxy_header,
                )
                return Refused(400, PROXY_HEADER_TWICE.format(policy.proxy_header, len(named)))
            found = policy.proxy_identity(named[0] if named else None)
            if found is not None:
                return found
        credentials = basic_credentials(headers.get("authorization"))
        if credentials is None or not policy.accounts:
            return None
        return await self._basic(*credentials, network)

    async def _basic(self, user: str, password: str, network: str) -> Identity | Refused | None:
        account = self.policy.accounts.get(user)
        digest = self.cache.digest(account, password) if account is not None else b""
        if account is not None and self.cache.holds(account, digest):
            return Identity(user, account.may_act, "basic")
        # A name of any length is one short key; unknown names are counted
        # alike, so the limit tells nobody which names exist.
        keys = (
            f"user {hashlib.blake2b(user.encode(), digest_size=16).hexdigest()}",
            f"address {network}",
        )
        wait = self.throttle.begin(keys)
        if wait > 0:
            return Refused(429, LIMITED.format(math.ceil(wait)), math.ceil(wait))
        matched = await anyio.to_thread.run_sync(
            self._check, account or self._decoy, password, limiter=_check_limiter()
        )
        if account is None or not matched:
            waits = self.throttle.failed(keys)
            if waits > 0:
                log.warning(
                    "sign-ins for user %r or from %s wait %.0f s after repeated failures",
                    user[:100],
                    network,
                    waits,
                )
            return None
        self.throttle.succeeded(keys[0], keys[1:])
        self.cache.remember(account, digest)
        return Identity(user, account.may_act, "basic")


def _check_limiter() -> CapacityLimiter:
    try:
        return _checks.get()
    except LookupError:
        limiter = CapacityLimiter(1)
        _checks.set(limiter)
        return limiter
