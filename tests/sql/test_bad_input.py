"""Bad input catalogue: every procedure, fed NULLs, wrong shapes, garbage or
expired tokens, non-positive timeouts, malformed or oversized JSON and hostile
ids, answers with a clear error (or, where the input is harmless, does
nothing), changes no row, and leaves the hub serving other work."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from devkit.waiting import wait_until
from devkit.workloads.work_items import (
    activity_completed,
    activity_execute,
    event,
    external_raised,
    metadata,
    orchestration_started,
    start_orchestration,
)
from provider import ActivityWorker, PermanentError, TaskHub, now_ms
from provider.deploy import migrate
from tests.support.db import new_schema_name
from tests.support.planted_rows import Hub, fetch_row, planted

# SQLSTATEs that count as a clear refusal: invalid parameter / text / JSON
# (22xxx), lease lost (TH001), not found (P0002), wrong state (55000),
# over a limit (54000).
CLEAR_ERROR_CLASSES = ("22", "TH", "P0", "55", "54")
BIG = "x" * (9 * 1024 * 1024)


@pytest.fixture
def prepared(hub: TaskHub, sql: psycopg.Connection[Any]) -> Iterator[Hub]:
    yield Hub(hub, sql)


def now() -> int:
    return now_ms()


ITEM = json.dumps(start_orchestration("other"))
# Found by the fuzzer: JSON that no fetch can turn into jsonb. json.dumps
# writes a NUL character as the escape \u0000, which jsonb refuses; the
# parser runs out of stack on nesting about 15,000 deep.
NUL_EVENT = json.dumps({"type": "ExternalEvent", "name": "e", "data": "a\x00b"})
DEEP = "[" * 20_000 + "]" * 20_000
DEEP_ITEM = (
    '{"ExternalRaised": {"instance": "kept", "name": "e", "data": "{}", "extra": '
    + "[" * 600
    + "]" * 600
    + "}}"
)
WORK = json.dumps(activity_execute("other", 1))
DONE = json.dumps(activity_completed("kept", 7))

# (function, args) -> must raise a clear error and change nothing.
REFUSED: list[tuple[str, Callable[[Hub], tuple[Any, ...]]]] = [
    ("enqueue_orchestrator_work", lambda h: (None, ITEM, "now")),
    ("enqueue_orchestrator_work", lambda h: ("", ITEM, "now")),
    ("enqueue_orchestrator_work", lambda h: ("x", None, "now")),
    ("enqueue_orchestrator_work", lambda h: ("x", "not json", "now")),
    ("enqueue_orchestrator_work", lambda h: ("x", '{"Unknown": 1}', "now")),
    ("enqueue_orchestrator_work", lambda h: ("x", "[1, 2]", "now")),
    ("enqueue_orchestrator_work", lambda h: ("x", ITEM, None)),
    ("enqueue_orchestrator_work", lambda h: ("y" * 2000, ITEM, "now")),
    (
        "enqueue_orchestrator_work",
        lambda h: ("x", json.dumps({"ExternalRaised": {"data": BIG}}), "now"),
    ),
    ("fetch_orchestration_item", lambda h: (now(), None)),
    ("fetch_orchestration_item", lambda h: (now(), 0)),
    ("fetch_orchestration_item", lambda h: (now(), -1000)),
    ("fetch_orchestration_item", lambda h: (now(), 1000, 5, 1)),
    ("fetch_orchestration_item", lambda h: (now() + 86_400_000, 1000)),
    ("ack_orchestration_item", lambda h: (None, now(), 1, "[]", "[]", "[]", "{}")),
    ("ack_orchestration_item", lambda h: ("lock_garbage", now(), 1, "[]", "[]", "[]", "{}")),
    ("ack_orchestration_item", lambda h: (h.orchestration_token, now(), 0, "[]", "[]", "[]", "{}")),
    (
        "ack_orchestration_item",
        lambda h: (h.orchestration_token, now(), 1, '{"a": 1}', "[]", "[]", "{}"),
    ),
    (
        "ack_orchestration_item",
        lambda h: (
            h.orchestration_token,
            now(),
            1,
            '[{"event_id": -1, "event_data": "{}"}]',
            "[]",
            "[]",
            "{}",
        ),
    ),
    (
        "ack_orchestration_item",
        lambda h: (
            h.orchestration_token,
            now(),
            1,
            '[{"event_id": 9, "event_data": 5}]',
            "[]",
            "[]",
            "{}",
        ),
    ),
    (
        "ack_orchestration_item",
        lambda h: (h.orchestration_token, now(), 1, "[]", f"[{ITEM}]", "[]", "{}"),
    ),
    (
        "ack_orchestration_item",
        lambda h: (h.orchestration_token, now(), 1, "[]", "[]", "[42]", "{}"),
    ),
    ("ack_orchestration_item", lambda h: (h.orchestration_token, now(), 1, "[]", "[]", "[]", "[]")),
    (
        "ack_orchestration_item",
        lambda h: (h.orchestration_token, now(), 1, "[]", "[]", "[]", "{}", "{}"),
    ),
    (
        "ack_orchestration_item",
        lambda h: (
            h.orchestration_token,
            now(),
            1,
            json.dumps([{"event_id": 9, "event_data": BIG}]),
            "[]",
            "[]",
            "{}",
        ),
    ),
    (
        "ack_orchestration_item",
        lambda h: (
            h.orchestration_token,
            now(),
            1,
            json.dumps([{"event_id": 9, "event_data": NUL_EVENT}]),
            "[]",
            "[]",
            "{}",
        ),
    ),
    (
        "ack_orchestration_item",
        lambda h: (
            h.orchestration_token,
            now(),
            1,
            json.dumps([{"event_id": 9, "event_data": DEEP}]),
            "[]",
            "[]",
            "{}",
        ),
    ),
    (
        "ack_orchestration_item",
        lambda h: (h.orchestration_token, now(), 1, "[]", "[]", f"[{DEEP_ITEM}]", "{}"),
    ),
    ("abandon_orchestration_item", lambda h: ("lock_garbage", now())),
    ("abandon_orchestration_item", lambda h: (None, now())),
    ("abandon_orchestration_item", lambda h: (h.orchestration_token, now(), -5)),
    ("renew_orchestration_item_lock", lambda h: ("lock_garbage", now(), 30)),
    ("renew_orchestration_item_lock", lambda h: (h.orchestration_token, now(), 0)),
    ("renew_orchestration_item_lock", lambda h: (h.orchestration_token, now(), -30)),
    ("renew_orchestration_item_lock", lambda h: (h.orchestration_token, now(), None)),
    ("enqueue_worker_work", lambda h: (None, now())),
    ("enqueue_worker_work", lambda h: ("{bad json", now())),
    ("enqueue_worker_work", lambda h: (ITEM, now())),
    ("enqueue_worker_work", lambda h: (WORK, now(), "other", 1, 1, "")),
    ("enqueue_worker_work", lambda h: (WORK, now(), "other", 1, 1, None, "")),
    ("enqueue_worker_work", lambda h: (WORK, now(), "other", 1, 1, "s" * 2000)),
    ("fetch_work_item", lambda h: (now(), 0)),
    ("fetch_work_item", lambda h: (now(), None)),
    ("fetch_work_item", lambda h: (now(), 1000, "owner", -1)),
    ("fetch_work_item", lambda h: (now(), 1000, "", None)),
    ("fetch_work_item", lambda h: (now(), 1000, None, None, None, "everything")),
    ("ack_worker", lambda h: (None,)),
    ("ack_worker", lambda h: ("lock_garbage", "kept", DONE, now())),
    ("ack_worker", lambda h: (h.worker_token, None, DONE, now())),
    ("ack_worker", lambda h: (h.worker_token, "kept", "{not json", now())),
    ("ack_worker", lambda h: (h.worker_token, "kept", ITEM, now())),
    (
        "ack_worker",
        lambda h: (
            h.worker_token,
            "kept",
            json.dumps({"ActivityCompleted": {"result": BIG}}),
            now(),
        ),
    ),
    ("abandon_work_item", lambda h: ("lock_garbage", now())),
    ("abandon_work_item", lambda h: (h.worker_token, now(), -1)),
    ("renew_work_item_lock", lambda h: ("lock_garbage", now(), 30)),
    ("renew_work_item_lock", lambda h: (h.worker_token, now(), 0)),
    ("renew_session_lock", lambda h: (["owner"], now(), -1, 1000)),
    ("renew_session_lock", lambda h: (["owner"], now(), 1000, -1)),
    ("append_history", lambda h: ("kept", 1, '[{"event_id": 0, "event_data": "{}"}]')),
    ("append_history", lambda h: ("kept", 1, '{"event_id": 3}')),
    ("append_history", lambda h: ("", 1, '[{"event_id": 3, "event_data": "{}"}]')),
    ("append_history", lambda h: ("kept", 0, '[{"event_id": 3, "event_data": "{}"}]')),
    (
        "append_history",
        lambda h: ("kept", 1, json.dumps([{"event_id": 3, "event_data": NUL_EVENT}])),
    ),
    ("append_history", lambda h: ("kept", 1, json.dumps([{"event_id": 3, "event_data": DEEP}]))),
    ("taskhub_grant_runtime_role", lambda h: (None, "guarded")),
    ("taskhub_grant_runtime_role", lambda h: ("postgres", None)),
    ("taskhub_revoke_runtime_role", lambda h: (None,)),
    ("get_parent_id", lambda h: ("nobody",)),
    ("latest_execution_id", lambda h: ("nobody",)),
    ("prune_executions", lambda h: ("nobody",)),
    ("prune_executions", lambda h: ("kept", -1)),
    ("delete_instances_atomic", lambda h: (["kept"], False)),
    ("taskhub_prune_ended", lambda h: (None, 500)),
    ("taskhub_prune_ended", lambda h: (now(), -1)),
    ("taskhub_prune_ended", lambda h: (now(), 0)),
    ("taskhub_prune_ended", lambda h: (now(), None)),
    ("taskhub_prune_ended", lambda h: (now(), 10_001)),
]

# Harmless: no error required, but nothing may change.
NO_OPS: list[tuple[str, Callable[[Hub], tuple[Any, ...]]]] = [
    ("fetch_work_item", lambda h: (now(), 1000, None, None, None, "none")),
    ("renew_session_lock", lambda h: (None, now(), 1000, 1000)),
    ("renew_session_lock", lambda h: ([], now(), 1000, 1000)),
    ("append_history", lambda h: ("kept", 1, None)),
    ("fetch_history", lambda h: (None,)),
    ("fetch_history", lambda h: ("'; DROP TABLE instances; --",)),
    ("get_instance_info", lambda h: ("ünïcödé 🎉 \\ ' \"",)),
    ("get_kv_value", lambda h: (None, None)),
    ("get_kv_all_values", lambda h: ("nobody",)),
    ("get_custom_status", lambda h: ("kept", None)),
    ("get_instance_stats", lambda h: ("x" * 10_000,)),
    ("list_children", lambda h: (None,)),
    ("delete_instances_atomic", lambda h: (None, False)),
    ("delete_instances_atomic", lambda h: (["nobody", None], None)),
    ("get_queue_depths", lambda h: (None,)),
]


def case_id(case: tuple[str, Callable[[Hub], tuple[Any, ...]]]) -> str:
    return case[0]


def call(h: Hub, function: str, args: tuple[Any, ...]) -> None:
    values = [None if arg == "now" else arg for arg in args]
    if "now" in args:
        values[args.index("now")] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    h.call(function, *values)


@pytest.mark.parametrize("case", REFUSED, ids=[f"{c[0]}-{n}" for n, c in enumerate(REFUSED)])
def test_bad_input_is_refused_clearly_and_changes_nothing(
    prepared: Hub, case: tuple[str, Callable[[Hub], tuple[Any, ...]]]
) -> None:
    function, arguments = case
    before = prepared.snapshot()
    with pytest.raises(psycopg.Error) as refused:
        call(prepared, function, arguments(prepared))
    error = refused.value
    assert error.sqlstate is not None and error.sqlstate.startswith(CLEAR_ERROR_CLASSES), (
        error.sqlstate,
        str(error),
    )
    assert error.diag.message_primary
    assert prepared.snapshot() == before


@pytest.mark.parametrize("case", NO_OPS, ids=[f"{c[0]}-{n}" for n, c in enumerate(NO_OPS)])
def test_harmless_input_changes_nothing(
    prepared: Hub, case: tuple[str, Callable[[Hub], tuple[Any, ...]]]
) -> None:
    function, arguments = case
    before = prepared.snapshot()
    call(prepared, function, arguments(prepared))
    assert prepared.snapshot() == before


def test_after_the_catalogue_the_hub_still_serves_work(prepared: Hub) -> None:
    for function, arguments in REFUSED:
        with pytest.raises(psycopg.Error):
            call(prepared, function, arguments(prepared))
    hub = prepared.hub
    hub.ack_work_item(prepared.worker_token, activity_completed("kept", 7))
    hub.ack_orchestration_item(prepared.orchestration_token, 1)
    hub.enqueue_orchestrator_work("fresh", start_orchestration("fresh"))
    served = {hub.fetch_orchestration_item(30_000).instance_id for _ in range(2)}  # type: ignore[union-attr]
    assert served == {"kept", "fresh"}


@pytest.mark.parametrize(
    "instance",
    ["'; DROP TABLE instances; --", 'quo"te\\back', "ünïcödé 🎉", "z" * 1000],
    ids=["sql", "quotes", "unicode", "long"],
)
def test_hostile_instance_ids_are_stored_verbatim(hub: TaskHub, instance: str) -> None:
    hub.enqueue_orchestrator_work(instance, start_orchestration(instance))
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None and item.instance_id == instance
    hub.ack_orchestration_item(
        item.lock_token, 1, history_delta=[orchestration_started(instance)], metadata=metadata()
    )
    assert hub.get_instance_info(instance).instance_id == instance
    assert hub.read_history(instance)[0]["instance_id"] == instance


def test_malformed_rows_written_behind_our_back_do_not_block_the_queue(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    sql.execute(
        f'INSERT INTO "{hub_schema}".orchestrator_queue'
        " (instance_id, work_item, visible_at, created_at)"
        " VALUES ('broken', '{not json', now() - interval '1 minute', now())"
    )
    hub.enqueue_orchestrator_work("healthy", start_orchestration("healthy"))
    first = hub.fetch_orchestration_item(30_000)
    second = hub.fetch_orchestration_item(30_000)
    assert first is not None and second is not None
    assert first.instance_id == "broken" and [str(m) for m in first.messages] == ["{not json"]
    assert second.instance_id == "healthy"


def test_the_worker_loop_survives_an_item_it_cannot_read(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    sql.execute(
        f'INSERT INTO "{hub_schema}".worker_queue (work_item, visible_at, created_at)'
        " VALUES ('{not json', now() - interval '1 minute', now())"
    )
    hub.enqueue_worker_work(activity_execute("readable", 1, name="Echo"))
    worker = ActivityWorker(hub, concurrency=1, idle_poll_ms=10, max_error_backoff_ms=50)
    worker.register("Echo", lambda ctx, value: value)
    with worker:
        wait_until(lambda: worker.stats.completed, timeout_s=10, message="the readable item done")
        assert all(thread.is_alive() for thread in worker._threads)
    assert worker.stats.completed == 1


# --- Found by the fuzzer: rows no fetch could read wedged the whole hub. ----


UNREADABLE = {"nul-escape": NUL_EVENT, "nested-20000-deep": DEEP}


@pytest.mark.pins_defect(
    "a row the fetch cannot parse makes every fetch fail, for every instance",
    fails_on=("taskhub-0006", "duroxide-0.2.2"),
)
@pytest.mark.also_on("taskhub-text-history")
@pytest.mark.parametrize("where", ["history", "message"])
@pytest.mark.parametrize("payload", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_no_stored_row_makes_a_fetch_fail(
    flavour_schema: str, sql: psycopg.Connection[Any], where: str, payload: str
) -> None:
    if not planted(sql, flavour_schema, where, payload):
        # A history stored as json refuses a row nested deeper than the
        # server's stack takes: the bad state cannot exist.
        assert payload == DEEP
        return
    sql.execute(
        f'SELECT "{flavour_schema}".enqueue_orchestrator_work(%s, %s, now())',
        ["good", json.dumps(start_orchestration("good"))],
    )

    bad = fetch_row(sql, flavour_schema)
    assert bad is not None and bad[0] == "bad" and bad[2] == 1
    # Leased and handed over: a row the fetch could not parse as a JSON string
    # of its text (the runtime sees a history error and poisons this instance
    # after its attempts); on a json hub a \u0000 escape is valid JSON, and
    # the row goes as it is (the runtime reads it).
    handed_over = bad[3] if where == "history" else bad[4]
    assert payload in handed_over or json.loads(payload) in handed_over
    good = fetch_row(sql, flavour_schema)
    assert good is not None and good[0] == "good"

    # The delivery was counted, so the poison path can end it.
    sql.execute(f'SELECT "{flavour_schema}".abandon_orchestration_item(%s, %s)', [bad[1], now_ms()])
    again = fetch_row(sql, flavour_schema)
    assert again is not None and again[0] == "bad" and again[2] == 2


@pytest.mark.also_on("taskhub-text-history")
@pytest.mark.pins_defect(
    "get_instance_stats fails on the instance's own unreadable first event",
    fails_on=("taskhub-0006", "duroxide-0.2.2"),
)
@pytest.mark.parametrize("payload", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_reads_of_an_instance_survive_its_own_unreadable_rows(
    flavour_schema: str, sql: psycopg.Connection[Any], payload: str
) -> None:
    if not planted(sql, flavour_schema, "history", payload):
        assert payload == DEEP  # refused by a history stored as json
        return
    q = f'"{flavour_schema}"'
    stats = sql.execute(f"SELECT * FROM {q}.get_instance_stats('bad')").fetchone()
    assert stats is not None and stats[0] is True and stats[1] == 1
    history = sql.execute(f"SELECT * FROM {q}.fetch_history('bad')").fetchall()
    assert history == [(payload,)]
    info = sql.execute(f"SELECT instance_id FROM {q}.get_instance_info('bad')").fetchall()
    assert info == [("bad",)]


@pytest.fixture(
    params=[
        pytest.param("head"),
        pytest.param(
            "0006",
            marks=pytest.mark.xfail(strict=True, reason="0006 has the defect the fuzzer found"),
        ),
    ]
)
def revision_hub(
    request: pytest.FixtureRequest, database_url: str, make_hub: Callable[..., TaskHub]
) -> TaskHub:
    """A TaskHub on a schema at head, or at revision 0006 (the defect)."""
    schema = new_schema_name("rv")
    migrate.upgrade(database_url, schema, str(request.param))
    return make_hub(schema)


def test_the_provider_refuses_an_event_no_fetch_could_read(
    revision_hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    hub = revision_hub
    hub.enqueue_orchestrator_work("nul", start_orchestration("nul"))
    item = hub.fetch_orchestration_item(30_000)
    assert item is not None
    hub.ack_orchestration_item(
        item.lock_token, 1, history_delta=[orchestration_started("nul")], metadata=metadata()
    )
    with pytest.raises(PermanentError) as refused:
        hub.append_history("nul", 1, [event(2, "nul", "ExternalEvent", name="e", data="a\x00b")])
    assert refused.value.sqlstate == "22023" and "\\u0000" in refused.value.message
    assert [e["event_id"] for e in hub.read_history("nul")] == [1]

    # The same through an ack: refused, and the lease still holds.
    hub.enqueue_orchestrator_work("nul", external_raised("nul"))
    turn = hub.fetch_orchestration_item(30_000)
    assert turn is not None
    deep: Any = []
    for _ in range(600):
        deep = [deep]
    for bad_event in (
        event(2, "nul", "ExternalEvent", name="e", data="a\x00b"),
        event(2, "nul", "ExternalEvent", name="e", data=deep),
    ):
        with pytest.raises(PermanentError) as refused:
            hub.ack_orchestration_item(turn.lock_token, 1, history_delta=[bad_event])
        assert refused.value.sqlstate == "22023" and "cannot be stored" in refused.value.message
    hub.ack_orchestration_item(turn.lock_token, 1)
    assert [e["event_id"] for e in hub.read_history("nul")] == [1]


@pytest.mark.pins_defect(
    "the lease follows a caller clock far ahead of the server, outliving its timeout",
    fails_on=("taskhub-0006", "duroxide-0.2.2"),
)
def test_a_caller_clock_far_ahead_cannot_stretch_a_lease(
    flavour_schema: str, sql: psycopg.Connection[Any]
) -> None:
    q = f'"{flavour_schema}"'
    sql.execute(
        f"SELECT {q}.enqueue_orchestrator_work('skewed', %s, now())",
        [json.dumps(start_orchestration("skewed"))],
    )
    server_ms = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
    row = sql.execute(
        f"SELECT out_lock_token, {server_ms}"
        f" FROM {q}.fetch_orchestration_item({server_ms} + 290000, 30000)"
    ).fetchone()
    assert row is not None
    token, fetched_at_ms = row[0], int(row[1])
    lease = sql.execute(
        f"SELECT locked_until, locked_at FROM {q}.instance_locks WHERE lock_token = %s", [token]
    ).fetchone()
    assert lease is not None
    # No lease ends later than the server's now + timeout + the allowed skew (1 s).
    assert int(lease[0]) <= fetched_at_ms + 30_000 + 1_000
    assert int(lease[1]) <= fetched_at_ms

    sql.execute(f"SELECT {q}.renew_orchestration_item_lock(%s, %s, 1)", [token, now_ms()])
    renewed = sql.execute(
        f"SELECT locked_until, locked_at FROM {q}.instance_locks WHERE lock_token = %s", [token]
    ).fetchone()
    assert renewed is not None and int(renewed[0]) > int(renewed[1])


def test_a_null_role_gets_its_own_error(
    revision_hub: TaskHub, sql: psycopg.Connection[Any]
) -> None:
    """Found by the fuzzer: 0006 answered `42704 role NULL does not exist`."""
    q = f'"{revision_hub.config.schema}"'
    for call in (
        f"SELECT {q}.taskhub_grant_runtime_role(NULL)",
        f"SELECT {q}.taskhub_revoke_runtime_role(NULL)",
    ):
        with pytest.raises(psycopg.errors.NullValueNotAllowed):
            sql.execute(call)
        sql.rollback()


@pytest.fixture(
    params=[
        pytest.param("head"),
        pytest.param(
            "0015",
            marks=pytest.mark.xfail(
                strict=True, reason="0015 answers with PostgreSQL's own 22P05 / 54001"
            ),
        ),
    ]
)
def writes_at(request: pytest.FixtureRequest, database_url: str) -> str:
    """A schema at head, or at revision 0015 (before the two writes checked)."""
    schema = new_schema_name("wr")
    migrate.upgrade(database_url, schema, str(request.param))
    return schema


def _deep_completion() -> str:
    nested: Any = []
    for _ in range(600):
        nested = [nested]
    return json.dumps({"ActivityCompleted": {"instance": "kept", "id": 1, "result": nested}})


def test_the_runtime_writes_refuse_what_no_fetch_could_read(
    writes_at: str, sql: psycopg.Connection[Any]
) -> None:
    """enqueue_orchestrator_work and ack_worker answer a \\u0000 escape and
    nesting past the documented depth as every other write does: 22023, and
    nothing written (the worker item keeps its lease)."""
    q = f'"{writes_at}"'
    nul_item = json.dumps({"ExternalRaised": {"instance": "kept", "name": "e", "data": "a\x00b"}})
    nul_completion = json.dumps(
        {"ActivityCompleted": {"instance": "kept", "id": 1, "result": "a\x00b"}}
    )
    sql.execute(f"SELECT {q}.enqueue_worker_work(%s, %s, 'kept', 1, 1)", [WORK, now()])
    row = sql.execute(
        f"SELECT out_lock_token FROM {q}.fetch_work_item(%s, 30000)", [now()]
    ).fetchone()
    assert row is not None
    token = row[0]
    calls: list[tuple[str, list[Any]]] = [
        (f"SELECT {q}.enqueue_orchestrator_work('kept', %s, now())", [nul_item]),
        (f"SELECT {q}.enqueue_orchestrator_work('kept', %s, now())", [DEEP_ITEM]),
        (f"SELECT {q}.ack_worker(%s, 'kept', %s)", [token, nul_completion]),
        (f"SELECT {q}.ack_worker(%s, 'kept', %s)", [token, _deep_completion()]),
    ]
    for statement, args in calls:
        with pytest.raises(psycopg.Error) as refused:
            sql.execute(statement, args)
        sql.rollback()
        assert refused.value.sqlstate == "22023", (statement, str(refused.value))
        assert "cannot be stored" in (refused.value.diag.message_primary or "")
    assert sql.execute(f"SELECT count(*) FROM {q}.orchestrator_queue").fetchone() == (0,)
    leased = sql.execute(f"SELECT lock_token FROM {q}.worker_queue").fetchall()
    assert leased == [(token,)]
