"""The dashboard's accounts at rest: one line per user, the password hashed
with scrypt (hashlib) under a salt of its own. Standard library only, so that
`taskhub-pg dashboard hash-password` works without the web extra.

    # NAME:ROLE:scrypt$N$r$p$SALT$KEY   (blank lines and # comments are skipped)
    alice:operator:scrypt$32768$8$1$6Hq0...$Yb3...
    bob:viewer:scrypt$32768$8$1$pQ9w...$1xF...

NAME has no `:`, no space and no control character; ROLE is `viewer` (reads
the pages) or `operator` (reads, and takes the actions when the dashboard
runs with --allow-actions); SALT and KEY are unpadded URL-safe base64.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

VIEWER, OPERATOR = "viewer", "operator"
ROLES = (VIEWER, OPERATOR)
SCHEME = "scrypt"
# scrypt's cost: 32 MiB and about 0.1 s a check. The dashboard checks a
# password once in a while (then keeps a keyed digest of it, sign_in.py).
COST_N, BLOCK_R, PARALLEL_P = 2**15, 8, 1
SALT_BYTES, KEY_BYTES = 16, 32
# What a line may ask for: weaker is refused, stronger than this would let a
# line make each check take gigabytes.
MIN_N, MAX_N, MAX_R, MAX_P = 2**14, 2**20, 16, 4
MAX_NAME = 64
# What hash-password accepts: a guesser's few tries an hour (throttle.py)
# get nowhere against 12 characters.
MIN_PASSWORD = 12


class AccountError(ValueError):
    """A line that is no account. The message says what is wrong and never
    quotes the line: a password pasted there by mistake stays unprinted."""


@dataclass(frozen=True)
class Account:
    name: str
    role: str
    n: int
    r: int
    p: int
    salt: bytes = field(repr=False)
    key: bytes = field(repr=False)

    @property
    def may_act(self) -> bool:
        return self.role == OPERATOR

    def matches(self, password: str) -> bool:
        """Whether the password is this account's, in constant time."""
        derived = _derive(password, self.salt, self.n, self.r, self.p)
        return hmac.compare_digest(derived, self.key)


def decoy() -> Account:
    """An account no password matches: checked for an unknown name, so that
    a wrong name takes as long as a wrong password."""
    return Account("", VIEWER, COST_N, BLOCK_R, PARALLEL_P, secrets.token_bytes(16), b"")


def check_name(name: str) -> str:
    if not name or len(name) > MAX_NAME:
        raise AccountError(f"a user name has 1 to {MAX_NAME} characters")
    if ":" in name or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise AccountError("a user name has no ':', no space and no control character")
    return name


def check_role(role: str) -> str:
    if role not in ROLES:
        raise AccountError(f"the role is {' or '.join(ROLES)}")
    return role


def hash_line(name: str, role: str, password: str) -> str:
    """The account's line, for a users file or TASKHUB_DASHBOARD_USERS."""
    check_name(name)
    check_role(role)
    if len(password) < MIN_PASSWORD:
        raise AccountError(
            f"the password has {len(password)} characters: give at least {MIN_PASSWORD}"
        )
    salt = secrets.token_bytes(SALT_BYTES)
    key = _derive(password, salt, COST_N, BLOCK_R, PARALLEL_P)
    hashed = f"{SCHEME}${COST_N}${BLOCK_R}${PARALLEL_P}${_b64(salt)}${_b64(key)}"
    return f"{name}:{role}:{hashed}"


def parse_line(line: str) -> Account:
    parts = line.strip().split(":")
    if len(parts) != 3:
        raise AccountError("an account line is NAME:ROLE:HASH (taskhub-pg dashboard hash-password)")
    name, role, hashed = parts
    check_name(name)
    check_role(role)
    fields = hashed.split("$")
    if len(fields) != 6 or fields[0] != SCHEME:
        raise AccountError(f"the hash is {SCHEME}$N$r$p$SALT$KEY")
    try:
        n, r, p = (int(value) for value in fields[1:4])
        salt, key = _unb64(fields[4]), _unb64(fields[5])
    except (ValueError, binascii.Error):
        raise AccountError("the hash's numbers or base64 are unreadable") from None
    if not (MIN_N <= n <= MAX_N and n & (n - 1) == 0 and 1 <= r <= MAX_R and 1 <= p <= MAX_P):
        raise AccountError(
            f"scrypt's N is a power of 2 from {MIN_N} to {MAX_N}, r 1 to {MAX_R}, p 1 to {MAX_P}"
        )
    if len(salt) < SALT_BYTES or len(key) < 16:
        raise AccountError(f"the salt has at least {SALT_BYTES} bytes, the key at least 16")
    return Account(name, role, n, r, p, salt, key)


def read_accounts(text: str, source: str) -> dict[str, Account]:
    """Every account of a file's (or a variable's) text, by name; an error
    names the source and the line number."""
    accounts: dict[str, Account] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            account = parse_line(line)
        except AccountError as error:
            raise AccountError(f"{source} line {number}: {error}") from None
        if account.name in accounts:
            raise AccountError(f"{source} line {number}: user {account.name!r} is there twice")
        accounts[account.name] = account
    return accounts


def _derive(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * n * r + 2**20, dklen=KEY_BYTES
    )


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    if not text or any(ch not in _B64_ALPHABET for ch in text):
        raise ValueError("not unpadded URL-safe base64")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
