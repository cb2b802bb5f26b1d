"""The schemas a test or a benchmark can run against.

* `taskhub`: created by our Alembic migrations (the product).
* `duroxide-0.2.2`: created by the released duroxide runtime, with its
  shipped procedures (the defects we fix).
* `taskhub-caller-clock`: our schema with one deliberate defect put back: the
  lease clock is the caller's p_now_ms, as in duroxide-pg before 0.2.2. Clock
  tests must fail on it.
* `taskhub-0005`: our schema at revision 0005, whose fetch fixed the lease end
  when it claimed the instance, before reading the history. Tests of the lease
  left at the client must fail on it.
* `taskhub-without-wakeups`: our schema with no push wakeups at all (revision
  0008, the last before them, with the jit = off of 0010): the anchor that
  the notifications' cost is measured against.
* `taskhub-jsonb`: our schema at head on a hub that existed before revision
  0017, so its fetch still hands the turn over as jsonb (not yet switched):
  what json saves is measured against it.
* `taskhub-text-history`: our schema at head on a hub that existed before
  revision 0029, so it stores its history as text (not yet switched): rows
  that a json history refuses by its type can still be written there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import psycopg

from provider.deploy import migrate


@dataclass(frozen=True)
class Flavour:
    name: str
    prefix: str
    build: Callable[[str, str], None]
    # The revision a plain `migrate.upgrade` takes the schema to, when that is
    # all the flavour is (the tests then clone one migrated schema); None
    # when it is built some other way.
    migrated_to: str | None = None

    def create_schema(self, url: str, schema: str) -> str:
        self.build(url, schema)
        return schema

    def __str__(self) -> str:
        return self.name


def _duroxide(url: str, schema: str) -> None:
    import duroxide

    # Connecting runs duroxide's own migration runner, which creates the schema.
    duroxide.PostgresProvider.connect_with_schema(url, schema)


def _taskhub_with_caller_clock(url: str, schema: str) -> None:
    migrate.upgrade(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f'CREATE OR REPLACE FUNCTION "{schema}".taskhub_clock_ms(p_caller_ms bigint) '
            "RETURNS bigint LANGUAGE sql AS 'SELECT p_caller_ms'"
        )


HOT_PATH = ("fetch_orchestration_item", "ack_orchestration_item", "fetch_work_item", "ack_worker")


def _taskhub_without_wakeups(url: str, schema: str) -> None:
    migrate.upgrade(url, schema, "0008")
    with psycopg.connect(url, autocommit=True) as conn:
        for (function,) in conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc AS p"
            " WHERE p.pronamespace = %s::regnamespace AND p.proname = ANY(%s)",
            [f'"{schema}"', list(HOT_PATH)],
        ).fetchall():
            conn.execute(f"ALTER FUNCTION {function} SET jit = off")


def _taskhub_made_before_json(url: str, schema: str) -> None:
    migrate.upgrade(url, schema, "0016")
    migrate.upgrade(url, schema)


def _migrated(name: str, prefix: str, revision: str) -> Flavour:
    """Our schema as the migrations leave it at `revision`: at an earlier one,
    the defect a later one fixed is still there."""

    def create(url: str, schema: str) -> None:
        migrate.upgrade(url, schema, revision)

    return Flavour(name, prefix, create, migrated_to=revision)


TASKHUB = _migrated("taskhub", "th", "head")
DUROXIDE_0_2_2 = Flavour("duroxide-0.2.2", "dx", _duroxide)
TASKHUB_CALLER_CLOCK = Flavour("taskhub-caller-clock", "tc", _taskhub_with_caller_clock)
TASKHUB_0005 = _migrated("taskhub-0005", "t5", "0005")
TASKHUB_0006 = _migrated("taskhub-0006", "t6", "0006")
TASKHUB_0007 = _migrated("taskhub-0007", "t7", "0007")
TASKHUB_0008 = _migrated("taskhub-0008", "t8", "0008")
TASKHUB_0009 = _migrated("taskhub-0009", "t9", "0009")
TASKHUB_0010 = _migrated("taskhub-0010", "t10", "0010")
TASKHUB_0012 = _migrated("taskhub-0012", "t12", "0012")
# The last revision before the call gate (0015): what the gate costs per call.
TASKHUB_0014 = _migrated("taskhub-0014", "t14", "0014")
# The last revision before the lean acks (0018).
TASKHUB_0017 = _migrated("taskhub-0017", "t17", "0017")
# The last revision whose worker fetch went by id (0021 goes by visibility).
TASKHUB_0020 = _migrated("taskhub-0020", "t20", "0020")
# The last revision whose orchestration hot path joined tables in a statement
# (0022 reads and writes one table a statement, for Citus).
TASKHUB_0021 = _migrated("taskhub-0021", "t21", "0021")
# The last revision whose writes took nesting up to 500 levels and whose fetch
# handed over what its parser could read (0024: what the runtime decodes).
TASKHUB_0023 = _migrated("taskhub-0023", "t23", "0023")
# The last revision whose hot path could plan a bitmap scan of a queue (0026
# turns them off: they leave consumed messages' index entries unmarked).
TASKHUB_0025 = _migrated("taskhub-0025", "t25", "0025")
# The last released revision whose per-instance message read could walk the
# queue's primary key, when the statistics were taken after a churn emptied
# it (0029 reads with no order another index could serve).
TASKHUB_0028 = _migrated("taskhub-0028", "t28", "0028")


def _taskhub_made_before_json_history(url: str, schema: str) -> None:
    """A hub created before revision 0029 and upgraded since: its history
    stays text until `turn-form json` stores it as json."""
    migrate.upgrade(url, schema, "0028")
    migrate.upgrade(url, schema)


def _taskhub_with_one_limit(url: str, schema: str) -> None:
    migrate.upgrade(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            f"SELECT \"{schema}\".taskhub_set_flow_limit('activity', 'A', 10000, 'benchmark')"
        )


TASKHUB_WITHOUT_WAKEUPS = Flavour("taskhub-without-wakeups", "tnw", _taskhub_without_wakeups)
TASKHUB_JSONB = Flavour("taskhub-jsonb", "tjb", _taskhub_made_before_json)
TASKHUB_TEXT_HISTORY = Flavour("taskhub-text-history", "tth", _taskhub_made_before_json_history)
TASKHUB_ONE_LIMIT = Flavour("taskhub-one-limit", "tol", _taskhub_with_one_limit)
ALL = {
    flavour.name: flavour
    for flavour in (
        TASKHUB,
        DUROXIDE_0_2_2,
        TASKHUB_CALLER_CLOCK,
        TASKHUB_0005,
        TASKHUB_0006,
        TASKHUB_0007,
        TASKHUB_0008,
        TASKHUB_0009,
        TASKHUB_0010,
        TASKHUB_0012,
        TASKHUB_0014,
        TASKHUB_0017,
        TASKHUB_0020,
        TASKHUB_0021,
        TASKHUB_0023,
        TASKHUB_0025,
        TASKHUB_0028,
        TASKHUB_WITHOUT_WAKEUPS,
        TASKHUB_JSONB,
        TASKHUB_TEXT_HISTORY,
        TASKHUB_ONE_LIMIT,
    )
}
