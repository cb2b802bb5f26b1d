"""Revision 0021 changes what a worker lease token looks like ('lock_<id>_
<uuid>', so that an item is found by its primary key and the queue keeps no
index on lock_token). Leases handed out before a deploy live on across it:
their holders renew, ack and abandon them after the upgrade, and the leases
0021 hands out are acked after a downgrade."""

from __future__ import annotations

import psycopg
import pytest

from devkit.workloads.work_items import activity_execute
from provider import LockLost, TaskHub, now_ms
from provider.deploy import migrate
from tests.support.db import new_schema_name


def leases(hub: TaskHub, count: int) -> list[str]:
    for n in range(count):
        hub.enqueue_worker_work(activity_execute("across", n + 1))
    found = [hub.fetch_work_item(60_000) for _ in range(count)]
    return [lease.lock_token for lease in found if lease is not None]


def queued(url: str, schema: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".worker_queue').fetchone()
    return int(row[0]) if row else -1


def test_a_lease_handed_out_before_the_upgrade_is_renewed_acked_and_abandoned_after(
    database_url: str,
) -> None:
    schema = new_schema_name("tk")
    migrate.upgrade(database_url, schema, "0020")
    with TaskHub.connect(database_url, schema) as hub:
        renewed, acked, abandoned = leases(hub, 3)
        assert not renewed.startswith("lock_1_")  # 0020's form: 'lock_<uuid>'
        migrate.upgrade(database_url, schema)
        assert hub.renew_work_item_lock(renewed, 60_000) > now_ms()
        hub.ack_work_item(acked, None)
        hub.abandon_work_item(abandoned)
        hub.ack_work_item(renewed, None)
        again = hub.fetch_work_item(60_000)
        assert again is not None and again.lock_token.startswith("lock_")
        hub.ack_work_item(again.lock_token, None)
    assert queued(database_url, schema) == 0


def test_a_lease_0021_handed_out_is_acked_after_a_downgrade(database_url: str) -> None:
    schema = new_schema_name("tk")
    migrate.upgrade(database_url, schema)
    with TaskHub.connect(database_url, schema) as hub:
        kept, given_back = leases(hub, 2)
        migrate.downgrade(database_url, schema, "0020")
        hub.ack_work_item(kept, None)
        hub.abandon_work_item(given_back)
    assert queued(database_url, schema) == 1


def test_a_token_naming_an_item_it_does_not_hold_is_refused(database_url: str) -> None:
    schema = new_schema_name("tk")
    migrate.upgrade(database_url, schema)
    with TaskHub.connect(database_url, schema) as hub:
        (token,) = leases(hub, 1)
        forged = f"lock_{token.split('_')[1]}_00000000-0000-0000-0000-000000000000"
        with pytest.raises(LockLost):
            hub.ack_work_item(forged, None)
        with pytest.raises(LockLost):
            hub.abandon_work_item(forged)
        with pytest.raises(LockLost):
            hub.renew_work_item_lock(forged, 60_000)
        hub.ack_work_item(token, None)
    assert queued(database_url, schema) == 0
