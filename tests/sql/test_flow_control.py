"""Flow control in fetch_work_item (docs/flow-control.md): a paused activity
is handed out never, a limited one to at most max_running leases at once
over every connection, its slots follow the lease, and the rules are changed
only through the audited verbs. On duroxide 0.2.2 none of this exists."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.workloads.work_items import activity_execute, metadata
from provider import Client, StartRequest, TaskHub, now_ms
from provider.errors import InvalidInput

HubFactory = Callable[..., TaskHub]


def queue(hub: TaskHub, name: str, count: int, first_id: int = 1) -> None:
    for activity_id in range(first_id, first_id + count):
        hub.enqueue_worker_work(activity_execute(f"{name}-inst", activity_id, name=name))


def fetched_name(hub: TaskHub, lock_ms: int = 30_000) -> tuple[str, str] | None:
    lease = hub.fetch_work_item(lock_ms)
    if lease is None:
        return None
    body = lease.work_item["ActivityExecute"]
    assert isinstance(body, dict)
    return str(body["name"]), lease.lock_token


def running(sql: psycopg.Connection[Any], schema: str, name: str = "Charge") -> int:
    """How many of the activity's slots a live lease holds, as the hub counts them."""
    row = sql.execute(
        f'SELECT running FROM "{schema}".taskhub_read_flow_rules() WHERE name = %s', [name]
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_paused_activity_is_never_handed_out_and_all_of_it_runs_after_resume(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    queue(hub, "Charge", 5)
    queue(hub, "Mail", 3)
    # A Charge item written behind the functions' back: no name column.
    sql.execute(
        f'INSERT INTO "{hub_schema}".worker_queue (work_item, visible_at, created_at)'
        " VALUES (%s, now(), now())",
        [json.dumps(activity_execute("by-hand", 1, name="Charge"))],
    )
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_pause_flow('activity', 'Charge', 'vendor down')")

    handed = [fetched_name(hub) for _ in range(5)]
    assert [item[0] if item else None for item in handed] == ["Mail"] * 3 + [None] * 2

    sql.execute(f"SELECT \"{hub_schema}\".taskhub_resume_flow('activity', 'Charge')")
    after = [fetched_name(hub) for _ in range(7)]
    assert [item[0] if item else None for item in after] == ["Charge"] * 6 + [None]
    for item in handed[:3] + after[:6]:
        assert item is not None
        hub.ack_work_item(item[1], None)
    assert sql.execute(f'SELECT count(*) FROM "{hub_schema}".worker_queue').fetchone() == (0,)


def test_a_limit_holds_leases_to_max_running_and_a_slot_follows_the_lease(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    queue(hub, "Charge", 6)
    queue(hub, "Mail", 1, first_id=100)
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_limit('activity', 'Charge', 2)")

    first, second, third, fourth = (fetched_name(hub) for _ in range(4))
    assert first and second and third and fourth is None
    assert (first[0], second[0], third[0]) == ("Charge", "Charge", "Mail")
    assert running(sql, hub_schema) == 2

    # An ack frees a slot; an abandon too; the next fetch takes it.
    hub.ack_work_item(first[1], None)
    assert running(sql, hub_schema) == 1
    again = fetched_name(hub)
    assert again and again[0] == "Charge" and fetched_name(hub) is None
    hub.abandon_work_item(second[1])
    renewed = fetched_name(hub)
    assert renewed and renewed[0] == "Charge" and fetched_name(hub) is None

    # A renewal keeps the slot: it is held as long as the lease.
    hub.renew_work_item_lock(renewed[1], 120_000)
    assert running(sql, hub_schema) == 2 and fetched_name(hub) is None

    # A lease that ends unrenewed (a crashed worker) stops counting with it.
    hub.ack_work_item(again[1], None)
    short = fetched_name(hub, lock_ms=200)
    assert short and fetched_name(hub) is None
    deadline = time.monotonic() + 10
    while (taken := fetched_name(hub)) is None:
        assert time.monotonic() < deadline, "the slot of an ended lease never came back"
        time.sleep(0.02)
    assert taken[0] == "Charge"
    assert running(sql, hub_schema) == 2


def test_concurrent_fetches_never_lease_more_than_the_limit(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any], database_url: str
) -> None:
    hub = make_hub(hub_schema)
    queue(hub, "Charge", 120)
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_limit('activity', 'Charge', 3)")
    leased_now = (
        f'SELECT count(*) FROM "{hub_schema}".worker_queue WHERE lock_token IS NOT NULL'
        " AND locked_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    )
    peaks: list[int] = []
    done: list[str] = []
    lock = threading.Lock()

    def dispatcher() -> None:
        own = make_hub(hub_schema)
        with psycopg.connect(database_url, autocommit=True) as look:
            idle_since = time.monotonic()
            while time.monotonic() - idle_since < 1.0:
                item = fetched_name(own)
                if item is None:
                    time.sleep(0.001)
                    continue
                idle_since = time.monotonic()
                # The leases committed now, over every dispatcher: never above 3.
                row = look.execute(leased_now).fetchone()
                assert row is not None
                with lock:
                    peaks.append(int(row[0]))
                    done.append(item[1])
                own.ack_work_item(item[1], None)

    threads = [threading.Thread(target=dispatcher) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(done) == 120 and len(set(done)) == 120
    assert 1 <= max(peaks) <= 3


def test_bad_rules_are_refused_in_one_line_and_every_change_is_kept(
    hub_schema: str, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    with Client.connect(database_url, hub_schema) as client:
        with pytest.raises(InvalidInput, match="max_running"):
            client.set_activity_limit("Charge", 0)
        with pytest.raises(InvalidInput, match="name"):
            client.set_activity_limit("", 3)
        with pytest.raises(InvalidInput, match="reason"):
            client.pause_activity("Charge", reason="x" * 3000)
        for bad in [
            "SELECT \"{s}\".taskhub_set_flow_limit('activity', 'Charge', 0)",
            "SELECT \"{s}\".taskhub_pause_flow('queue', 'Charge')",
            "SELECT \"{s}\".taskhub_pause_flow('activity', '')",
        ]:
            with pytest.raises(psycopg.errors.InvalidParameterValue) as refused:
                sql.execute(bad.format(s=hub_schema))
            primary = refused.value.diag.message_primary
            assert primary and "\n" not in primary
        assert client.flow_rules() == []

        assert client.set_activity_limit("Charge", 5, reason="provider quota") is None
        assert client.pause_activity("Charge", reason="vendor down") is False
        assert client.set_activity_limit("Charge", 4) == 5
        (rule,) = client.flow_rules()
        assert (rule.name, rule.paused, rule.max_running, rule.running) == ("Charge", True, 4, 0)
        assert client.resume_activity("Charge") is True
        assert client.remove_activity_limit("Charge") == 4
        assert client.flow_rules() == []

    changes = sql.execute(
        f"SELECT action, paused_after, max_running_after, reason, changed_by = session_user"
        f' FROM "{hub_schema}".taskhub_flow_changes ORDER BY id'
    ).fetchall()
    assert changes == [
        ("set limit", False, 5, "provider quota", True),
        ("pause", True, 5, "vendor down", True),
        ("set limit", True, 4, None, True),
        ("resume", False, 4, None, True),
        ("remove limit", False, None, None, True),
    ]


def test_a_rate_limit_hands_out_a_burst_then_no_faster_than_the_rate(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any], database_url: str
) -> None:
    hub = make_hub(hub_schema)
    queue(hub, "Mail", 60)
    queue(hub, "Sms", 2, first_id=1000)
    with Client.connect(database_url, hub_schema) as client:
        assert client.set_activity_rate("Mail", 50, burst=5, reason="the mail provider") is None
        (rule,) = client.flow_rules()
        assert (rule.per_second, rule.burst, rule.tokens) == (50, 5, 5)
    started = time.monotonic()
    done: list[str] = []
    lock = threading.Lock()

    def dispatcher() -> None:
        own = make_hub(hub_schema)
        while True:
            with lock:
                if len(done) >= 62:
                    return
            item = fetched_name(own)
            if item is None:
                time.sleep(0.002)
                continue
            with lock:
                done.append(item[0])
            own.ack_work_item(item[1], None)

    threads = [threading.Thread(target=dispatcher, daemon=True) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    elapsed = time.monotonic() - started
    assert sorted(done) == ["Mail"] * 60 + ["Sms"] * 2
    # A burst of 5, then 55 at 50 a second: at least 1.1 s, whatever the load.
    assert elapsed >= 55 / 50 * 0.95
    # The unrated activity was not held behind the rated backlog.
    assert done.index("Sms") < 30


def test_removing_a_rate_lets_the_backlog_go_at_once(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    hub = make_hub(hub_schema)
    queue(hub, "Mail", 4)
    with Client.connect(database_url, hub_schema) as client:
        client.set_activity_rate("Mail", 0.01, burst=1)
        first = fetched_name(hub)
        assert first is not None and fetched_name(hub) is None
        assert client.remove_activity_rate("Mail") == 0.01
        assert client.flow_rules() == []
    assert [fetched_name(hub) is not None for _ in range(4)] == [True, True, True, False]


def test_a_lowered_or_removed_limit_still_counts_the_leases_held(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    """Found by a fresh attacker: the verbs deleted held slots, and new items
    were let in on top of the ones still running (8 live under a limit of 5)."""
    hub = make_hub(hub_schema)
    queue(hub, "Charge", 20)

    def limit(n: int | None) -> None:
        verb = "taskhub_remove_flow_limit('activity', 'Charge')"
        if n is not None:
            verb = f"taskhub_set_flow_limit('activity', 'Charge', {n})"
        sql.execute(f'SELECT "{hub_schema}".{verb}')

    def fetch_all() -> list[str]:
        tokens = []
        while (item := fetched_name(hub)) is not None:
            tokens.append(item[1])
        return tokens

    limit(5)
    held = fetch_all()
    assert len(held) == 5
    for token in held[:2]:
        hub.ack_work_item(token, None)
    running_now = held[2:]  # in slots 3 to 5
    limit(3)
    assert fetch_all() == []  # 3 run: the lowered limit is full
    limit(2)
    limit(5)
    more = fetch_all()
    assert len(more) == 2  # 5 live, not 8
    limit(None)
    limit(3)
    assert fetch_all() == []  # the 5 still held count against the new 3
    assert running(sql, hub_schema) == 5
    for token in running_now + more:
        hub.ack_work_item(token, None)
    assert len(fetch_all()) == 3


def test_a_caller_clock_ahead_frees_no_held_slot_and_adds_no_token(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    """Found by a fresh attacker: a fetch whose p_now_ms ran a second ahead
    took the slot of a lease with less than a second left, which its holder
    then renewed (2 live under a limit of 1); and a bucket refilled by it."""
    hub = make_hub(hub_schema)
    queue(hub, "Charge", 3)
    queue(hub, "Mail", 6, first_id=100)
    sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_limit('activity', 'Charge', 1)")
    holder = hub.fetch_work_item(800)
    assert holder is not None
    ahead = hub.fetch_work_item(30_000, caller_now_ms=now_ms() + 1_000)
    assert ahead is None or str(ahead.work_item["ActivityExecute"]).count("'Mail'") == 1
    hub.renew_work_item_lock(holder.lock_token, 30_000)
    assert running(sql, hub_schema) == 1

    sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_rate('activity', 'Mail', 0.01, 2)")
    taken = [hub.fetch_work_item(30_000, caller_now_ms=now_ms() + 1_000) for _ in range(4)]
    mails = [t for t in taken if t is not None and "'Mail'" in str(t.work_item)]
    assert len(mails) <= 2 + (1 if ahead is not None else 0)


def test_activities_at_their_limits_do_not_use_up_the_attempts_of_others(
    hub_schema: str, make_hub: HubFactory, sql: psycopg.Connection[Any]
) -> None:
    """Found by a fresh attacker: 8 activities at their limits, each with an
    item waiting ahead of an unlimited one, made every fetch return nothing."""
    hub = make_hub(hub_schema)
    for n in range(10):
        name = f"Vendor{n}"
        sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_limit('activity', %s, 1)", [name])
        queue(hub, name, 2, first_id=10 * n + 1)
    queue(hub, "Unlimited", 1, first_id=1000)
    names = []
    while (item := fetched_name(hub)) is not None:
        names.append(item[0])
    assert sorted(names) == sorted([f"Vendor{n}" for n in range(10)] + ["Unlimited"])


def tenant_items(client: Client, hub: TaskHub, tenant: str, count: int) -> None:
    """`count` Work items of an instance started with tenant=`tenant`."""
    instance = f"order-{tenant}"
    client.start(instance, "Order", labels={"tenant": tenant})
    for activity_id in range(1, count + 1):
        hub.enqueue_worker_work(activity_execute(instance, activity_id, name="Work"))


def leased_by_tenant(sql: psycopg.Connection[Any], schema: str) -> dict[str, int]:
    rows = sql.execute(
        f'SELECT taskhub_labels[1], count(*) FROM "{schema}".worker_queue'
        " WHERE lock_token IS NOT NULL GROUP BY 1"
    ).fetchall()
    return {str(label): int(count) for label, count in rows}


def test_a_paused_label_holds_its_items_and_no_other(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        tenant_items(client, hub, "acme", 3)
        tenant_items(client, hub, "globex", 2)
        sql.execute(
            f"SELECT \"{hub_schema}\".taskhub_pause_flow('label', 'tenant=acme', 'noisy tenant')"
        )
        leases = [hub.fetch_work_item(30_000) for _ in range(3)]
        assert [lease is not None for lease in leases] == [True, True, False]
        assert leased_by_tenant(sql, hub_schema) == {"tenant=globex": 2}
        sql.execute(f"SELECT \"{hub_schema}\".taskhub_resume_flow('label', 'tenant=acme')")
        assert all(hub.fetch_work_item(30_000) is not None for _ in range(3))
        assert leased_by_tenant(sql, hub_schema) == {"tenant=acme": 3, "tenant=globex": 2}


def test_a_limit_for_each_value_of_a_label_holds_each_tenant_to_it(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """A per-tenant limit of 2 over 4 tenants, tenant a with a backlog ahead
    of the others: 2 of each run at once, and a's backlog keeps no other
    tenant waiting."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        tenant_items(client, hub, "a", 50)
        for tenant in ("b", "c", "d"):
            tenant_items(client, hub, tenant, 3)
        sql.execute(f"SELECT \"{hub_schema}\".taskhub_set_flow_limit('label_each', 'tenant', 2)")
        leases = []
        while (lease := hub.fetch_work_item(30_000)) is not None:
            leases.append(lease)
        assert leased_by_tenant(sql, hub_schema) == {
            "tenant=a": 2,
            "tenant=b": 2,
            "tenant=c": 2,
            "tenant=d": 2,
        }
        # An ack frees its tenant's slot, for that tenant's next item.
        hub.ack_work_item(leases[0].lock_token, None)
        lease = hub.fetch_work_item(30_000)
        assert lease is not None
        assert leased_by_tenant(sql, hub_schema)["tenant=a"] == 2
        running = sql.execute(
            f'SELECT kind, name, max_running, running FROM "{hub_schema}".taskhub_read_flow_rules()'
        ).fetchall()
        assert running == [("label_each", "tenant", 2, 8)]


def test_label_rules_are_refused_in_one_line_when_they_cannot_be(
    hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    q = f'"{hub_schema}"'
    for call, message in (
        (f"{q}.taskhub_pause_flow('label', 'Tenant=acme', NULL)", "is not key=value"),
        (f"{q}.taskhub_pause_flow('label_each', 'tenant', NULL)", "not paused or rated"),
        (f"{q}.taskhub_set_flow_rate('label_each', 'tenant', 5)", "not paused or rated"),
        (f"{q}.taskhub_set_flow_limit('label_each', 'tenant=acme', 2)", "is not a key"),
        (f"{q}.taskhub_pause_flow('queue', 'x', NULL)", "activity, label, label_each or"),
    ):
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=message) as refused:
            sql.execute(f"SELECT {call}")
        assert "\n" not in (refused.value.diag.message_primary or "\n")
    assert sql.execute(f"SELECT count(*) FROM {q}.taskhub_flow_rules").fetchone() == (0,)


def leased_turns_by_tenant(sql: psycopg.Connection[Any], schema: str) -> dict[str, int]:
    rows = sql.execute(
        f'SELECT taskhub_labels[1], count(*) FROM "{schema}".instance_locks'
        " WHERE locked_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
        " GROUP BY 1"
    ).fetchall()
    return {str(label): int(count) for label, count in rows}


def test_a_tenants_start_backlog_keeps_no_other_tenants_turns_waiting(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """Tenant a's 40 starts queued first, then b's 3: under a per-tenant
    limit of 2 the fetches hold 2 of a's turns and hand out b's at once; a
    paused tenant's turns are handed out never."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start_many(
            [StartRequest(f"a-{n}", "Order", labels={"tenant": "a"}) for n in range(40)]
        )
        client.start_many(
            [StartRequest(f"b-{n}", "Order", labels={"tenant": "b"}) for n in range(3)]
        )
        client.start("c-0", "Order", labels={"tenant": "c"})
        client.set_label_limit("tenant", 2, each_value=True)
        client.pause_label("tenant=c")
        turns = []
        while (turn := hub.fetch_orchestration_item(30_000)) is not None:
            turns.append(turn)
        assert leased_turns_by_tenant(sql, hub_schema) == {"tenant=a": 2, "tenant=b": 2}
        # The rule counts them (turns, beside its activities running).
        [rule] = [rule for rule in client.flow_rules() if rule.kind == "label_each"]
        assert (rule.running, rule.turns) == (0, 4)
        # An ack frees its tenant's slot for that tenant's next turn.
        first_b = next(turn for turn in turns if turn.instance_id.startswith("b-"))
        hub.ack_orchestration_item(first_b.lock_token, 1, metadata=metadata("Order"))
        turn = hub.fetch_orchestration_item(30_000)
        assert turn is not None and turn.instance_id.startswith("b-")
        assert hub.fetch_orchestration_item(30_000) is None
        client.resume_label("tenant=c")
        turn = hub.fetch_orchestration_item(30_000)
        assert turn is not None and turn.instance_id == "c-0"


def test_the_defect_without_label_rules_a_backlog_goes_first(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    """The same queue with no rule: the fetches hand out a's 40 turns before
    any of b's."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start_many(
            [StartRequest(f"a-{n}", "Order", labels={"tenant": "a"}) for n in range(40)]
        )
        client.start("b-0", "Order", labels={"tenant": "b"})
    order = []
    while (turn := hub.fetch_orchestration_item(30_000)) is not None:
        order.append(turn.instance_id)
    assert order.index("b-0") == 40


def turn_order(hub: TaskHub, most: int | None = None) -> list[str]:
    """Instances in the order one dispatcher is given their turns (all of
    them, or the first `most`), each acked before the next fetch (so no
    limit is ever reached)."""
    order: list[str] = []
    while len(order) != most and (turn := hub.fetch_orchestration_item(30_000)) is not None:
        order.append(turn.instance_id)
        hub.ack_orchestration_item(turn.lock_token, 1, metadata=metadata("Order"))
    return order


def test_under_a_per_value_limit_tenants_take_turns_even_with_one_dispatcher(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    """Tenant a's 40 starts queued first, then b's 3 and c's 3. One
    dispatcher never fills a limit of 2, so the limit alone holds nothing
    back: the label sets take turns (a, b, c, then the whole queue in
    order), and b's and c's starts are all handed out within the first 12
    turns, each tenant's in its own order. Unlabelled work goes in the
    whole queue's turn, in order."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start_many(
            [StartRequest(f"a-{n:02}", "Order", labels={"tenant": "a"}) for n in range(40)]
        )
        client.start("plain-0", "Order")
        for tenant in "bc":
            labels = {"tenant": tenant}
            client.start_many(
                [StartRequest(f"{tenant}-{n}", "Order", labels=labels) for n in range(3)]
            )
        client.set_label_limit("tenant", 2, each_value=True)
    order = turn_order(hub)
    assert len(order) == 47
    assert max(order.index(f"{tenant}-{n}") for tenant in "bc" for n in range(3)) < 12
    for tenant in "abc":
        mine = [instance for instance in order if instance.startswith(f"{tenant}-")]
        assert mine == sorted(mine)
    # Unlabelled, started after a's 40: in the whole queue's turns, behind them.
    assert order[-1] == "plain-0"


def test_under_a_per_value_limit_work_with_a_priority_goes_first_whatever_its_set(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    """300 tenants' starts queued, then one unlabelled start at priority 9:
    the label sets' turns do not hold it back (a first form served it after
    a turn of every set, 300th)."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start_many(
            [StartRequest(f"t{n:03}", "Order", labels={"tenant": f"t{n:03}"}) for n in range(300)]
        )
        client.set_label_limit("tenant", 2, each_value=True)
        assert turn_order(hub, 3) == ["t000", "t001", "t002"]
        client.start("urgent", "Order", priority=9)
    assert turn_order(hub, 2) == ["urgent", "t003"]


def test_a_per_value_limit_lowered_then_raised_is_whole_again(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """Slots {1, 3} left by a lowering under load: once raised to 3 again,
    3 run at once (the missing slot 2 is made)."""
    hub = make_hub(hub_schema)
    q = f'"{hub_schema}"'
    with Client.connect(database_url, hub_schema) as client:
        tenant_items(client, hub, "acme", 6)
        client.set_label_limit("tenant", 3, each_value=True)
        leases = [hub.fetch_work_item(30_000) for _ in range(3)]
        assert all(leases)
        hub.ack_work_item(leases[1].lock_token, None)  # type: ignore[union-attr]
        client.set_label_limit("tenant", 1, each_value=True)
        client.set_label_limit("tenant", 3, each_value=True)
        for lease in (leases[0], leases[2]):
            hub.ack_work_item(lease.lock_token, None)  # type: ignore[union-attr]
        again = [hub.fetch_work_item(30_000) for _ in range(4)]
        assert [lease is not None for lease in again] == [True, True, True, False]
    assert sql.execute(
        f"SELECT running FROM {q}.taskhub_read_flow_rules() WHERE kind = 'label_each'"
    ).fetchone() == (3,)


def test_many_full_tenants_keep_no_other_work_waiting(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    """45 tenants at a per-value limit of 1, each with a second item queued,
    ahead of another activity's item: a fetch still reaches it."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.set_label_limit("tenant", 1, each_value=True)
        for n in range(45):
            tenant_items(client, hub, f"t{n}", 2)
        hub.enqueue_worker_work(activity_execute("other", 1, name="Mail"))
        leased = [hub.fetch_work_item(30_000) for _ in range(46)]
    names = [str(lease.work_item["ActivityExecute"]["name"]) for lease in leased if lease]
    assert len(names) == 46 and names.count("Mail") == 1


def test_a_token_is_taken_only_for_an_item_handed_out(
    hub_schema: str, make_hub: HubFactory, database_url: str, sql: psycopg.Connection[Any]
) -> None:
    """A rate on Mail and a full tenant: a fetch that finds the tenant full
    takes no Mail token, and the next tenant's Mail goes."""
    hub = make_hub(hub_schema)
    q = f'"{hub_schema}"'
    with Client.connect(database_url, hub_schema) as client:
        client.set_label_limit("tenant", 1, each_value=True)
        client.start("order-full", "Order", labels={"tenant": "full"})
        hub.enqueue_worker_work(activity_execute("order-full", 1, name="Work"))
        hub.enqueue_worker_work(activity_execute("order-full", 2, name="Mail"))
        client.start("order-free", "Order", labels={"tenant": "free"})
        hub.enqueue_worker_work(activity_execute("order-free", 1, name="Mail"))
        first = hub.fetch_work_item(30_000)  # tenant full's Work: now it is full
        assert first is not None
        client.set_activity_rate("Mail", 0.001, burst=1)
        second = hub.fetch_work_item(30_000)
        assert second is not None
        assert second.work_item["ActivityExecute"]["instance"] == "order-free"
    assert sql.execute(f"SELECT tokens < 1 FROM {q}.taskhub_flow_buckets").fetchone() == (True,)


def test_an_instance_read_behind_a_full_labels_candidates_is_tried_in_the_same_call(
    hub_schema: str, make_hub: HubFactory, database_url: str
) -> None:
    """A page holds more instances than a pass tries (8): tenant a's 8
    turns ahead of b's, a full under its limit. The pass tries a's, skips the
    label, and the next pass went on after the whole page: b, read but never
    tried, waited a call, and so on every call (None here)."""
    hub = make_hub(hub_schema)
    with Client.connect(database_url, hub_schema) as client:
        client.start("a-0", "Order", labels={"tenant": "a"})
        client.set_label_limit("tenant=a", 1)
        held = hub.fetch_orchestration_item(30_000)  # a's one turn: the limit is full
        assert held is not None and held.instance_id == "a-0"
        client.start_many(
            [StartRequest(f"a-{n}", "Order", labels={"tenant": "a"}) for n in range(1, 9)]
        )
        client.start("b-0", "Order", labels={"tenant": "b"})
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None and turn.instance_id == "b-0"
