"""Provider validation suite §3.10 kv_store: the per-instance key/value store.

KV mutations are derived by the provider from the KeyValueSet / KeyValueCleared
/ KeyValuesCleared events of an ack's history delta, in delta order. Client
reads (get_kv_value) see the live state: values merged from ended executions
plus the current execution's changes. The kv_snapshot of a fetched item holds
only the state merged from ended executions (the current one is replayed).
"""

from __future__ import annotations

from typing import Any

from provider import ExecutionMetadata, OrchestrationItem, TaskHub
from tests.validation.harness import (
    continue_as_new,
    create_instance,
    event,
    external_raised,
    fetch_o,
    meta_nv,
    start_orchestration,
    started,
)

# --- builders -------------------------------------------------------------


def _in_execution(evt: dict[str, Any], execution_id: int) -> dict[str, Any]:
    evt["execution_id"] = execution_id
    return evt


def kv_set(
    event_id: int,
    instance: str,
    key: str,
    value: str,
    last_updated_at_ms: int = 0,
    *,
    execution_id: int = 1,
) -> dict[str, Any]:
    """KVS(id, k, v[, ts]): a KeyValueSet event."""
    evt = event(
        event_id,
        instance,
        "KeyValueSet",
        key=key,
        value=value,
        last_updated_at_ms=last_updated_at_ms,
    )
    return _in_execution(evt, execution_id)


def kv_cleared(event_id: int, instance: str, key: str, *, execution_id: int = 1) -> dict[str, Any]:
    return _in_execution(event(event_id, instance, "KeyValueCleared", key=key), execution_id)


def kvs_cleared(event_id: int, instance: str, *, execution_id: int = 1) -> dict[str, Any]:
    return _in_execution(event(event_id, instance, "KeyValuesCleared"), execution_id)


# --- suite helpers ----------------------------------------------------------


def poke(provider: TaskHub, instance: str) -> None:
    provider.enqueue_for_orchestrator(external_raised(instance, "poke", "{}"))


def poke_and_fetch(provider: TaskHub, instance: str) -> OrchestrationItem:
    poke(provider, instance)
    item = fetch_o(provider)
    assert item.instance_id == instance
    return item


def ack_with_delta(
    provider: TaskHub, instance: str, execution_id: int, delta: list[dict[str, Any]]
) -> None:
    """poke; fetchO (must be Some); ack(exec, delta, meta{})."""
    item = poke_and_fetch(provider, instance)
    provider.ack_orchestration_item(
        item.lock_token, execution_id, history_delta=delta, metadata=ExecutionMetadata()
    )


def ack_empty(provider: TaskHub, item: OrchestrationItem, execution_id: int) -> None:
    provider.ack_orchestration_item(item.lock_token, execution_id, metadata=ExecutionMetadata())


def complete_instance(provider: TaskHub, instance: str, execution_id: int) -> None:
    """poke; fetch; ack [9999 OrchestrationCompleted "done"] meta{Completed, "done", n, v}."""
    item = poke_and_fetch(provider, instance)
    completed = _in_execution(
        event(9999, instance, "OrchestrationCompleted", output="done"), execution_id
    )
    provider.ack_orchestration_item(
        item.lock_token,
        execution_id,
        history_delta=[completed],
        metadata=meta_nv(status="Completed", output="done"),
    )


def continue_as_new_to(provider: TaskHub, instance: str, new_execution_id: int) -> None:
    """The suite's continue_as_new(X, n): end execution n-1 as ContinuedAsNew, start n."""
    item = poke_and_fetch(provider, instance)
    provider.ack_orchestration_item(
        item.lock_token, new_execution_id - 1, metadata=meta_nv(status="ContinuedAsNew")
    )

    provider.enqueue_for_orchestrator(continue_as_new(instance, "TestOrch", "{}", "1.0.0"))
    item = fetch_o(provider)
    assert item.instance_id == instance
    provider.ack_orchestration_item(
        item.lock_token,
        new_execution_id,
        history_delta=[started(instance, event_id=1, execution_id=new_execution_id)],
        metadata=meta_nv(),
    )


def snapshot_values(item: OrchestrationItem) -> dict[str, str]:
    return {key: entry.value for key, entry in item.kv_snapshot.items()}


# --- tests ------------------------------------------------------------------


def test_kv_set_and_get(provider: TaskHub) -> None:
    create_instance(provider, "kv-set")
    ack_with_delta(provider, "kv-set", 1, [kv_set(100, "kv-set", "counter", "42")])

    assert provider.get_kv_value("kv-set", "counter") == "42"


def test_kv_overwrite(provider: TaskHub) -> None:
    create_instance(provider, "kv-over")
    ack_with_delta(provider, "kv-over", 1, [kv_set(100, "kv-over", "status", "old")])
    assert provider.get_kv_value("kv-over", "status") == "old"

    ack_with_delta(provider, "kv-over", 1, [kv_set(101, "kv-over", "status", "new")])
    assert provider.get_kv_value("kv-over", "status") == "new"


def test_kv_clear_single(provider: TaskHub) -> None:
    create_instance(provider, "kv-clr1")
    ack_with_delta(provider, "kv-clr1", 1, [kv_set(100, "kv-clr1", "remove_me", "x")])
    assert provider.get_kv_value("kv-clr1", "remove_me") == "x"

    ack_with_delta(provider, "kv-clr1", 1, [kv_cleared(101, "kv-clr1", "remove_me")])
    assert provider.get_kv_value("kv-clr1", "remove_me") is None


def test_kv_clear_all(provider: TaskHub) -> None:
    create_instance(provider, "kv-clra")
    ack_with_delta(
        provider,
        "kv-clra",
        1,
        [kv_set(100, "kv-clra", "a", "1"), kv_set(101, "kv-clra", "b", "2")],
    )
    assert provider.get_kv_value("kv-clra", "a") == "1"
    assert provider.get_kv_value("kv-clra", "b") == "2"

    ack_with_delta(provider, "kv-clra", 1, [kvs_cleared(102, "kv-clra")])
    assert provider.get_kv_value("kv-clra", "a") is None
    assert provider.get_kv_value("kv-clra", "b") is None


def test_kv_get_nonexistent(provider: TaskHub) -> None:
    create_instance(provider, "kv-none")

    assert provider.get_kv_value("kv-none", "nope") is None


def test_kv_snapshot_in_fetch(provider: TaskHub) -> None:
    create_instance(provider, "kv-fetch")
    ack_with_delta(
        provider,
        "kv-fetch",
        1,
        [kv_set(100, "kv-fetch", "x", "10"), kv_set(101, "kv-fetch", "y", "20")],
    )
    complete_instance(provider, "kv-fetch", 1)

    item = poke_and_fetch(provider, "kv-fetch")
    assert len(item.kv_snapshot) == 2
    assert snapshot_values(item) == {"x": "10", "y": "20"}
    ack_empty(provider, item, 1)


def test_kv_snapshot_after_clear_single(provider: TaskHub) -> None:
    create_instance(provider, "kv-fclr1")
    ack_with_delta(
        provider,
        "kv-fclr1",
        1,
        [kv_set(100, "kv-fclr1", "keep", "yes"), kv_set(101, "kv-fclr1", "remove", "bye")],
    )
    ack_with_delta(provider, "kv-fclr1", 1, [kv_cleared(102, "kv-fclr1", "remove")])
    complete_instance(provider, "kv-fclr1", 1)

    item = poke_and_fetch(provider, "kv-fclr1")
    assert len(item.kv_snapshot) == 1
    assert snapshot_values(item) == {"keep": "yes"}
    assert "remove" not in item.kv_snapshot
    ack_empty(provider, item, 1)


def test_kv_snapshot_after_clear_all(provider: TaskHub) -> None:
    create_instance(provider, "kv-fclra")
    ack_with_delta(
        provider,
        "kv-fclra",
        1,
        [kv_set(100, "kv-fclra", "a", "1"), kv_set(101, "kv-fclra", "b", "2")],
    )
    ack_with_delta(provider, "kv-fclra", 1, [kvs_cleared(102, "kv-fclra")])

    item = poke_and_fetch(provider, "kv-fclra")
    assert item.kv_snapshot == {}
    ack_empty(provider, item, 1)


def test_kv_execution_id_tracking(provider: TaskHub) -> None:
    """A key overwritten by execution 2 survives pruning execution 1 (its last writer lives)."""
    create_instance(provider, "kv-exec")
    ack_with_delta(provider, "kv-exec", 1, [kv_set(100, "kv-exec", "shared", "from_exec_1")])
    assert provider.get_kv_value("kv-exec", "shared") == "from_exec_1"

    continue_as_new_to(provider, "kv-exec", 2)
    ack_with_delta(
        provider,
        "kv-exec",
        2,
        [kv_set(200, "kv-exec", "shared", "from_exec_2", execution_id=2)],
    )
    assert provider.get_kv_value("kv-exec", "shared") == "from_exec_2"

    provider.prune_executions("kv-exec", keep_last=1)
    assert provider.get_kv_value("kv-exec", "shared") == "from_exec_2"


def test_kv_cross_execution_overwrite(provider: TaskHub) -> None:
    create_instance(provider, "kv-xexec")
    ack_with_delta(provider, "kv-xexec", 1, [kv_set(100, "kv-xexec", "k", "v1")])
    assert provider.get_kv_value("kv-xexec", "k") == "v1"

    continue_as_new_to(provider, "kv-xexec", 2)
    ack_with_delta(provider, "kv-xexec", 2, [kv_set(200, "kv-xexec", "k", "v2", execution_id=2)])
    assert provider.get_kv_value("kv-xexec", "k") == "v2"


def test_kv_cross_execution_remove_readd(provider: TaskHub) -> None:
    create_instance(provider, "kv-xrm")
    ack_with_delta(provider, "kv-xrm", 1, [kv_set(100, "kv-xrm", "cycle", "exec1")])
    assert provider.get_kv_value("kv-xrm", "cycle") == "exec1"

    continue_as_new_to(provider, "kv-xrm", 2)
    ack_with_delta(provider, "kv-xrm", 2, [kv_cleared(200, "kv-xrm", "cycle", execution_id=2)])
    assert provider.get_kv_value("kv-xrm", "cycle") is None

    continue_as_new_to(provider, "kv-xrm", 3)
    ack_with_delta(provider, "kv-xrm", 3, [kv_set(300, "kv-xrm", "cycle", "exec3", execution_id=3)])
    assert provider.get_kv_value("kv-xrm", "cycle") == "exec3"


def test_kv_prune_preserves_overwritten(provider: TaskHub) -> None:
    create_instance(provider, "kv-prn1")
    ack_with_delta(provider, "kv-prn1", 1, [kv_set(100, "kv-prn1", "survive", "v1")])
    continue_as_new_to(provider, "kv-prn1", 2)
    ack_with_delta(
        provider, "kv-prn1", 2, [kv_set(200, "kv-prn1", "survive", "v2", execution_id=2)]
    )

    provider.prune_executions("kv-prn1", keep_last=1)

    assert provider.get_kv_value("kv-prn1", "survive") == "v2"


def test_kv_prune_preserves_all_keys(provider: TaskHub) -> None:
    """A key only execution 1 wrote survives pruning it: KV lives as long as the instance."""
    create_instance(provider, "kv-prn2")
    ack_with_delta(provider, "kv-prn2", 1, [kv_set(100, "kv-prn2", "orphan", "survives")])
    continue_as_new_to(provider, "kv-prn2", 2)
    ack_with_delta(
        provider, "kv-prn2", 2, [kv_set(200, "kv-prn2", "keeper", "alive", execution_id=2)]
    )
    assert provider.get_kv_value("kv-prn2", "orphan") == "survives"
    assert provider.get_kv_value("kv-prn2", "keeper") == "alive"

    provider.prune_executions("kv-prn2", keep_last=1)

    assert provider.get_kv_value("kv-prn2", "orphan") == "survives"
    assert provider.get_kv_value("kv-prn2", "keeper") == "alive"


def test_kv_instance_isolation(provider: TaskHub) -> None:
    create_instance(provider, "kv-iso-a")
    create_instance(provider, "kv-iso-b")
    ack_with_delta(provider, "kv-iso-a", 1, [kv_set(100, "kv-iso-a", "shared_name", "from_a")])
    ack_with_delta(provider, "kv-iso-b", 1, [kv_set(100, "kv-iso-b", "shared_name", "from_b")])

    assert provider.get_kv_value("kv-iso-a", "shared_name") == "from_a"
    assert provider.get_kv_value("kv-iso-b", "shared_name") == "from_b"


def test_kv_delete_instance_cascades(provider: TaskHub) -> None:
    create_instance(provider, "kv-del")
    ack_with_delta(provider, "kv-del", 1, [kv_set(100, "kv-del", "doomed", "bye")])
    complete_instance(provider, "kv-del", 1)
    assert provider.get_kv_value("kv-del", "doomed") == "bye"

    provider.delete_instance("kv-del", False)

    assert provider.get_kv_value("kv-del", "doomed") is None


def test_kv_clear_nonexistent_key(provider: TaskHub) -> None:
    create_instance(provider, "kv-clrne")
    ack_with_delta(provider, "kv-clrne", 1, [kv_cleared(100, "kv-clrne", "never_existed")])

    assert provider.get_kv_value("kv-clrne", "never_existed") is None


def test_kv_get_unknown_instance(provider: TaskHub) -> None:
    assert provider.get_kv_value("no-such-instance", "key") is None


def test_kv_set_after_clear(provider: TaskHub) -> None:
    """A clear-all followed by a set in the same ack: the delta order is respected."""
    create_instance(provider, "kv-sac")
    ack_with_delta(
        provider,
        "kv-sac",
        1,
        [kv_set(100, "kv-sac", "old_a", "1"), kv_set(101, "kv-sac", "old_b", "2")],
    )

    ack_with_delta(
        provider,
        "kv-sac",
        1,
        [kvs_cleared(102, "kv-sac"), kv_set(103, "kv-sac", "new_x", "fresh")],
    )

    assert provider.get_kv_value("kv-sac", "old_a") is None
    assert provider.get_kv_value("kv-sac", "old_b") is None
    assert provider.get_kv_value("kv-sac", "new_x") == "fresh"


def test_kv_empty_value(provider: TaskHub) -> None:
    create_instance(provider, "kv-empty")
    ack_with_delta(provider, "kv-empty", 1, [kv_set(100, "kv-empty", "blank", "")])

    assert provider.get_kv_value("kv-empty", "blank") == ""


def test_kv_large_value(provider: TaskHub) -> None:
    create_instance(provider, "kv-big")
    big_value = "x" * (16 * 1024)
    ack_with_delta(provider, "kv-big", 1, [kv_set(100, "kv-big", "payload", big_value)])

    assert provider.get_kv_value("kv-big", "payload") == big_value


def test_kv_special_chars_in_key(provider: TaskHub) -> None:
    create_instance(provider, "kv-chars")
    pairs = [
        ("key with spaces", "v1"),
        ("日本語キー", "v2"),
        ("dotted.key.name", "v3"),
        ("path/like/key", "v4"),
        ("emoji🎉key", "v5"),
    ]
    ack_with_delta(
        provider,
        "kv-chars",
        1,
        [kv_set(100 + i, "kv-chars", key, value) for i, (key, value) in enumerate(pairs)],
    )

    for key, value in pairs:
        assert provider.get_kv_value("kv-chars", key) == value, key


def test_kv_snapshot_empty(provider: TaskHub) -> None:
    create_instance(provider, "kv-sempty")

    item = poke_and_fetch(provider, "kv-sempty")
    assert item.kv_snapshot == {}
    ack_empty(provider, item, 1)


def test_kv_snapshot_cross_execution(provider: TaskHub) -> None:
    """The snapshot holds execution 1's key (merged at CAN), not the current execution's."""
    create_instance(provider, "kv-scross")
    ack_with_delta(provider, "kv-scross", 1, [kv_set(100, "kv-scross", "A", "from_exec1")])
    continue_as_new_to(provider, "kv-scross", 2)
    ack_with_delta(
        provider, "kv-scross", 2, [kv_set(200, "kv-scross", "B", "from_exec2", execution_id=2)]
    )

    item = poke_and_fetch(provider, "kv-scross")
    assert len(item.kv_snapshot) == 1
    assert snapshot_values(item) == {"A": "from_exec1"}
    assert "B" not in item.kv_snapshot
    ack_empty(provider, item, 2)


def test_kv_prune_current_execution_protected(provider: TaskHub) -> None:
    create_instance(provider, "kv-prncur")
    ack_with_delta(provider, "kv-prncur", 1, [kv_set(100, "kv-prncur", "alive", "yes")])

    provider.prune_executions("kv-prncur", keep_last=1)

    assert provider.get_kv_value("kv-prncur", "alive") == "yes"


def test_kv_delete_instance_with_children(provider: TaskHub) -> None:
    create_instance(provider, "kv-parent")
    ack_with_delta(provider, "kv-parent", 1, [kv_set(100, "kv-parent", "parent_key", "parent_val")])

    child_start = start_orchestration("kv-child")
    child_start["StartOrchestration"]["parent_instance"] = "kv-parent"
    child_start["StartOrchestration"]["parent_id"] = 1
    provider.enqueue_for_orchestrator(child_start)
    item = fetch_o(provider)
    assert item.instance_id == "kv-child"
    provider.ack_orchestration_item(
        item.lock_token,
        1,
        history_delta=[started("kv-child", parent_instance="kv-parent", parent_id=1)],
        metadata=meta_nv(parent_instance_id="kv-parent"),
    )
    ack_with_delta(provider, "kv-child", 1, [kv_set(100, "kv-child", "child_key", "child_val")])

    complete_instance(provider, "kv-child", 1)
    complete_instance(provider, "kv-parent", 1)

    provider.delete_instance("kv-parent", False)

    assert provider.get_kv_value("kv-parent", "parent_key") is None
    assert provider.get_kv_value("kv-child", "child_key") is None


def test_kv_clear_isolation(provider: TaskHub) -> None:
    create_instance(provider, "kv-ciso-a")
    create_instance(provider, "kv-ciso-b")
    ack_with_delta(provider, "kv-ciso-a", 1, [kv_set(100, "kv-ciso-a", "shared", "from_a")])
    ack_with_delta(provider, "kv-ciso-b", 1, [kv_set(100, "kv-ciso-b", "shared", "from_b")])

    ack_with_delta(provider, "kv-ciso-a", 1, [kvs_cleared(101, "kv-ciso-a")])

    assert provider.get_kv_value("kv-ciso-a", "shared") is None
    assert provider.get_kv_value("kv-ciso-b", "shared") == "from_b"


def test_kv_delta_snapshot_excludes_current_execution(provider: TaskHub) -> None:
    """Clients see a value set in the running execution; the fetch snapshot does not."""
    create_instance(provider, "kv-ds1")
    ack_with_delta(provider, "kv-ds1", 1, [kv_set(100, "kv-ds1", "counter", "1", 100)])
    assert provider.get_kv_value("kv-ds1", "counter") == "1"

    item = poke_and_fetch(provider, "kv-ds1")
    assert item.kv_snapshot == {}
    ack_empty(provider, item, 1)


def test_kv_delta_snapshot_includes_completed_execution(provider: TaskHub) -> None:
    create_instance(provider, "kv-ds2")
    ack_with_delta(provider, "kv-ds2", 1, [kv_set(100, "kv-ds2", "counter", "5", 100)])
    continue_as_new_to(provider, "kv-ds2", 2)

    item = poke_and_fetch(provider, "kv-ds2")
    assert snapshot_values(item).get("counter") == "5"
    ack_empty(provider, item, 2)


def test_kv_delta_client_reads_merged(provider: TaskHub) -> None:
    """Client reads merge the ended executions' store with the current changes (which win).

    Execution 2 is acked directly after completing execution 1 (no CAN, no new start).
    """
    create_instance(provider, "kv-dm")
    ack_with_delta(
        provider,
        "kv-dm",
        1,
        [
            kv_set(100, "kv-dm", "color", "red", 100),
            kv_set(101, "kv-dm", "size", "large", 101),
        ],
    )
    complete_instance(provider, "kv-dm", 1)

    ack_with_delta(
        provider,
        "kv-dm",
        2,
        [
            kv_set(200, "kv-dm", "color", "blue", 200, execution_id=2),
            kv_set(201, "kv-dm", "shape", "circle", 201, execution_id=2),
        ],
    )

    assert provider.get_kv_value("kv-dm", "color") == "blue"
    assert provider.get_kv_value("kv-dm", "size") == "large"
    assert provider.get_kv_value("kv-dm", "shape") == "circle"


def test_kv_delta_tombstone_overrides_store(provider: TaskHub) -> None:
    create_instance(provider, "kv-dt")
    ack_with_delta(provider, "kv-dt", 1, [kv_set(100, "kv-dt", "temp", "exists", 100)])
    complete_instance(provider, "kv-dt", 1)

    ack_with_delta(provider, "kv-dt", 2, [kv_cleared(200, "kv-dt", "temp", execution_id=2)])

    assert provider.get_kv_value("kv-dt", "temp") is None


def test_kv_delta_clear_all_tombstones_store(provider: TaskHub) -> None:
    create_instance(provider, "kv-dca")
    ack_with_delta(
        provider,
        "kv-dca",
        1,
        [kv_set(100, "kv-dca", "a", "1", 100), kv_set(101, "kv-dca", "b", "2", 101)],
    )
    complete_instance(provider, "kv-dca", 1)

    ack_with_delta(
        provider,
        "kv-dca",
        2,
        [
            kvs_cleared(200, "kv-dca", execution_id=2),
            kv_set(201, "kv-dca", "c", "3", 201, execution_id=2),
        ],
    )

    assert provider.get_kv_value("kv-dca", "a") is None
    assert provider.get_kv_value("kv-dca", "b") is None
    assert provider.get_kv_value("kv-dca", "c") == "3"


def test_kv_delta_merged_on_completion(provider: TaskHub) -> None:
    create_instance(provider, "kv-dmc")
    ack_with_delta(provider, "kv-dmc", 1, [kv_set(100, "kv-dmc", "result", "42", 100)])

    complete_instance(provider, "kv-dmc", 1)

    assert provider.get_kv_value("kv-dmc", "result") == "42"


def test_kv_delta_merged_on_can(provider: TaskHub) -> None:
    create_instance(provider, "kv-dmc2")
    ack_with_delta(
        provider,
        "kv-dmc2",
        1,
        [
            kv_set(100, "kv-dmc2", "version", "1", 100),
            kv_set(101, "kv-dmc2", "progress", "50%", 101),
        ],
    )
    ack_with_delta(provider, "kv-dmc2", 1, [kv_set(102, "kv-dmc2", "progress", "100%", 102)])
    continue_as_new_to(provider, "kv-dmc2", 2)

    item = poke_and_fetch(provider, "kv-dmc2")
    values = snapshot_values(item)
    assert values.get("version") == "1"
    assert values.get("progress") == "100%"
    ack_empty(provider, item, 2)


def test_kv_delta_delete_instance_cascades(provider: TaskHub) -> None:
    create_instance(provider, "kv-ddel")
    ack_with_delta(provider, "kv-ddel", 1, [kv_set(100, "kv-ddel", "data", "important", 100)])
    assert provider.get_kv_value("kv-ddel", "data") == "important"

    provider.delete_instance("kv-ddel", True)

    assert provider.get_kv_value("kv-ddel", "data") is None


def test_kv_delta_prune_untouched_key_survives(provider: TaskHub) -> None:
    """Keys merged from executions 1 and 2 survive pruning both (reads and snapshot)."""
    create_instance(provider, "kv-dprn")
    ack_with_delta(
        provider, "kv-dprn", 1, [kv_set(100, "kv-dprn", "stale_config", "from_exec_1", 100)]
    )
    continue_as_new_to(provider, "kv-dprn", 2)
    ack_with_delta(
        provider,
        "kv-dprn",
        2,
        [kv_set(200, "kv-dprn", "other", "unrelated", 200, execution_id=2)],
    )
    continue_as_new_to(provider, "kv-dprn", 3)
    assert provider.get_kv_value("kv-dprn", "stale_config") == "from_exec_1"
    assert provider.get_kv_value("kv-dprn", "other") == "unrelated"

    provider.prune_executions("kv-dprn", keep_last=1)

    assert provider.get_kv_value("kv-dprn", "stale_config") == "from_exec_1"
    assert provider.get_kv_value("kv-dprn", "other") == "unrelated"
    item = poke_and_fetch(provider, "kv-dprn")
    values = snapshot_values(item)
    assert values.get("stale_config") == "from_exec_1"
    assert values.get("other") == "unrelated"
    ack_empty(provider, item, 3)
