"""Provider settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict, get_args

from provider.errors import InvalidInput
from provider.schema_name import validate_schema_name

# What sits between the provider and the server (provider/client/pooling.py).
Pooler = Literal["auto", "direct", "session", "transaction"]


@dataclass(frozen=True)
class TaskHubConfig:
    """How to reach a task hub and how long its leases last.

    Lock timeouts bound crash detection: a worker that dies holding a lease
    releases it after this long. Long work keeps its lease by renewing it.
    """

    url: str = field(repr=False)  # libpq's URL or key=value string; it may hold a password
    schema: str = "public"  # the hub's schema
    # How long a fetched turn of an orchestration stays leased without a renewal.
    orchestration_lock_timeout_ms: int = 5_000
    # How long a fetched activity stays leased without a renewal.
    worker_lock_timeout_ms: int = 30_000
    # How long a worker's session affinity lasts without a renewal.
    session_lock_timeout_ms: int = 30_000
    pool_min_size: int = 1  # connections the pool keeps open
    pool_max_size: int = 10  # connections the pool opens at most
    # How long a call waits for a connection before failing (retryable).
    pool_timeout_s: float = 10.0
    # How long opening the hub waits for its first connection before failing
    # with a ConfigurationError (libpq counts whole seconds, at least 2, per
    # address it tries).
    connect_timeout_s: float = 10.0
    # Upper bound on any single call, so that no call can hang a connection.
    statement_timeout_ms: int | None = 30_000
    application_name: str = "taskhub-pg"  # as pg_stat_activity shows the connections
    # On a hub distributed by Citus (docs/scale-out.md): connect to the node
    # that holds it, found through `url` (the coordinator) when the hub opens,
    # so that each call is one hop. A hub that is not distributed there is
    # reached at `url` as it is.
    citus_direct: bool = False
    # What sits between the provider and the server: "auto" looks when the hub
    # opens; "direct", "session" or "transaction" (a pooler's pool mode) say it
    # (docs/poolers-and-failover.md).
    pooler: Pooler = "auto"
    # After how many runs psycopg prepares a statement on the server; None
    # never does (transaction pooling); "auto": psycopg's 5, None behind a
    # transaction pooler.
    prepare_threshold: int | Literal["auto"] | None = "auto"
    # Where push wakeups LISTEN when `url` goes through a transaction pooler:
    # the server directly, or a pooler's session mode. None: `url`, unless a
    # transaction pooler is in between (then the workers poll).
    listen_url: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        validate_schema_name(self.schema)
        for name in (
            "orchestration_lock_timeout_ms",
            "worker_lock_timeout_ms",
            "session_lock_timeout_ms",
        ):
            if getattr(self, name) <= 0:
                raise InvalidInput("connect", f"{name} must be positive")
        if not 1 <= self.pool_min_size <= self.pool_max_size:
            raise InvalidInput("connect", "need 1 <= pool_min_size <= pool_max_size")
        if self.pool_timeout_s <= 0:
            raise InvalidInput("connect", "pool_timeout_s must be positive")
        if self.connect_timeout_s <= 0:
            raise InvalidInput("connect", "connect_timeout_s must be positive")
        if self.statement_timeout_ms is not None and self.statement_timeout_ms <= 0:
            raise InvalidInput("connect", "statement_timeout_ms must be positive or None")
        if self.pooler not in get_args(Pooler):
            raise InvalidInput(
                "connect", f"pooler must be one of {', '.join(get_args(Pooler))}: {self.pooler!r}"
            )
        threshold = self.prepare_threshold
        if (
            threshold != "auto"
            and threshold is not None
            and (isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0)
        ):
            raise InvalidInput(
                "connect", "prepare_threshold must be a whole number >= 0, None or 'auto'"
            )


class TaskHubSettings(TypedDict, total=False):
    """TaskHubConfig's settings besides url and schema, as keyword arguments
    of TaskHub.connect, AsyncTaskHub.connect, Client.connect and
    AsyncClient.connect: `mypy --strict` checks each name and type
    (`**settings: Unpack[TaskHubSettings]`)."""

    orchestration_lock_timeout_ms: int
    worker_lock_timeout_ms: int
    session_lock_timeout_ms: int
    pool_min_size: int
    pool_max_size: int
    pool_timeout_s: float
    connect_timeout_s: float
    statement_timeout_ms: int | None
    application_name: str
    citus_direct: bool
    pooler: Pooler
    prepare_threshold: int | Literal["auto"] | None
    listen_url: str | None
