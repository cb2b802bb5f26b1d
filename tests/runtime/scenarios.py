"""The released runtime's scenario groups: every feature duroxide has, run by
the runtime itself on a hub and checked by its outcomes.

This module imports duroxide and the standard library only: the suite runs
it in its own process with duroxide 0.2.2 (test_duroxide_runtime.py), and
in a virtualenv holding another release alone (scenario_runner.py, from
test_released_runtimes.py). Each group takes the runtime's client and fails
with AssertionError; each uses its own instance ids.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import duroxide

WAIT_MS = 30_000
# How the runtime runs in both processes: quick polls, a few of each worker.
RUNTIME_OPTIONS = {
    "dispatcher_poll_interval_ms": 10,
    "orchestration_concurrency": 4,
    "worker_concurrency": 4,
}


def completed_output(client: Any, instance: str) -> Any:
    result = client.wait_for_orchestration(instance, WAIT_MS)
    assert result.status == "Completed", (instance, result.status, result.error)
    return result.output


def approve_when_waiting(client: Any, instance: str, event: str, data: Any) -> None:
    """Raise an event once the orchestration says (its custom status) that it
    listens: an event that comes before the subscription is dropped."""
    client.wait_for_status_change(instance, 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    client.raise_event(instance, event, data)


def register(runtime: Any) -> None:
    """The activities and orchestrations the groups start."""
    flaky_calls: dict[str, int] = {}
    lock = threading.Lock()

    @runtime.register_activity("Square")
    def square(ctx: Any, value: int) -> int:
        return value * value

    @runtime.register_activity("Greet")
    def greet(ctx: Any, name: str) -> str:
        return f"Hello, {name}!"

    @runtime.register_activity("Flaky")
    def flaky(ctx: Any, key: str) -> str:
        with lock:
            flaky_calls[key] = flaky_calls.get(key, 0) + 1
            calls = flaky_calls[key]
        if calls < 3:
            raise RuntimeError(f"transient failure {calls}")
        return f"succeeded on call {calls}"

    @runtime.register_activity("WhichWorker")
    def which_worker(ctx: Any, _: int) -> str:
        return str(ctx.worker_id)

    @runtime.register_orchestration("SumOfSquares")
    def sum_of_squares(ctx: Any, count: int) -> Any:
        results = yield ctx.all([ctx.schedule_activity("Square", n) for n in range(count)])
        yield ctx.schedule_timer(50)
        return sum(result["ok"] for result in results)

    @runtime.register_orchestration("Greeter")
    def greeter(ctx: Any, name: str) -> Any:
        greeting = yield ctx.schedule_activity("Greet", name)
        return greeting

    @runtime.register_orchestration("AwaitApproval")
    def await_approval(ctx: Any, _: Any) -> Any:
        ctx.set_custom_status("waiting for approval")
        approval = yield ctx.wait_for_event("Approve")
        ctx.set_custom_status("approved")
        return approval

    @runtime.register_orchestration("Child")
    def child(ctx: Any, value: int) -> Any:
        squared = yield ctx.schedule_activity("Square", value)
        return squared

    @runtime.register_orchestration("Parent")
    def parent(ctx: Any, value: int) -> Any:
        first = yield ctx.schedule_sub_orchestration("Child", value)
        second = yield ctx.schedule_sub_orchestration("Child", value + 1)
        return [first, second]

    @runtime.register_orchestration("Counter")
    def counter(ctx: Any, n: int) -> Any:
        ctx.set_kv_value("count", str(n))
        if n < 3:
            yield ctx.continue_as_new(n + 1)
            return None
        yield ctx.schedule_timer(1)
        return n

    @runtime.register_orchestration("RetryFlaky")
    def retry_flaky(ctx: Any, key: str) -> Any:
        result = yield ctx.schedule_activity_with_retry("Flaky", key, {"max_attempts": 5})
        return result

    @runtime.register_orchestration("SessionAffinity")
    def session_affinity(ctx: Any, session: str) -> Any:
        workers = []
        for n in range(3):
            worker = yield ctx.schedule_activity_on_session("WhichWorker", n, session)
            workers.append(worker)
        return workers

    @runtime.register_orchestration("Mailbox")
    def mailbox(ctx: Any, _: Any) -> Any:
        first = yield ctx.dequeue_event("inbox")
        second = yield ctx.dequeue_event("inbox")
        return [first, second]

    @runtime.register_orchestration("KeyValues")
    def key_values(ctx: Any, _: Any) -> Any:
        ctx.set_kv_value("colour", "blue")
        ctx.set_kv_value("size", "large")
        ctx.clear_kv_value("size")
        yield ctx.schedule_timer(1)
        return ctx.get_kv_all_values()

    @runtime.register_orchestration("WaitForever")
    def wait_forever(ctx: Any, _: Any) -> Any:
        ctx.set_custom_status("waiting")
        value = yield ctx.wait_for_event("NeverSent")
        return value


def activity_returns_its_result(client: Any) -> None:
    client.start_orchestration("greet-1", "Greeter", "World")
    assert completed_output(client, "greet-1") == "Hello, World!"


def fan_out_fan_in_with_a_timer(client: Any) -> None:
    for n in range(5):
        client.start_orchestration(f"sum-{n}", "SumOfSquares", 5)
    for n in range(5):
        assert completed_output(client, f"sum-{n}") == 30


def external_event_reaches_the_waiting_orchestration(client: Any) -> None:
    client.start_orchestration("approve-1", "AwaitApproval", None)
    approve_when_waiting(client, "approve-1", "Approve", {"by": "ops"})
    assert completed_output(client, "approve-1") == {"by": "ops"}
    status = client.get_status("approve-1")
    assert status.custom_status == "approved"
    assert status.custom_status_version == 2


def sub_orchestrations_report_to_their_parent(client: Any) -> None:
    client.start_orchestration("parent-1", "Parent", 3)
    assert completed_output(client, "parent-1") == [9, 16]
    children = client.get_instance_tree("parent-1")
    assert len(children.all_ids) == 3


def continue_as_new_starts_new_executions_and_keeps_kv(client: Any) -> None:
    client.start_orchestration("counter-1", "Counter", 1)
    assert completed_output(client, "counter-1") == 3
    assert client.list_executions("counter-1") == [1, 2, 3]
    assert client.get_kv_value("counter-1", "count") == "3"


def activity_retries_until_it_succeeds(client: Any) -> None:
    client.start_orchestration("retry-1", "RetryFlaky", "retry-1")
    assert completed_output(client, "retry-1") == "succeeded on call 3"


def session_activities_run_on_one_worker(client: Any) -> None:
    client.start_orchestration("session-1", "SessionAffinity", "sess-a")
    workers = completed_output(client, "session-1")
    assert len(workers) == 3 and len(set(workers)) == 1


def event_queue_buffers_messages_in_order(client: Any) -> None:
    # Enqueued right after the start, before the orchestration dequeues: the
    # mailbox keeps them.
    client.start_orchestration("mailbox-1", "Mailbox", None)
    client.enqueue_event("mailbox-1", "inbox", "first")
    client.enqueue_event("mailbox-1", "inbox", "second")
    assert completed_output(client, "mailbox-1") == ["first", "second"]


def key_value_state_is_readable_by_clients(client: Any) -> None:
    client.start_orchestration("kv-1", "KeyValues", None)
    assert completed_output(client, "kv-1") == {"colour": "blue"}
    assert client.get_kv_value("kv-1", "colour") == "blue"
    assert client.get_kv_value("kv-1", "size") is None


def cancelling_an_instance_ends_it(client: Any) -> None:
    client.start_orchestration("cancel-1", "WaitForever", None)
    client.wait_for_status_change("cancel-1", 0, poll_interval_ms=10, timeout_ms=WAIT_MS)
    client.cancel_instance("cancel-1", "no longer needed")
    result = client.wait_for_orchestration("cancel-1", WAIT_MS)
    assert result.status == "Failed"
    assert "no longer needed" in json.dumps(result.error)


def many_concurrent_instances_all_complete(client: Any) -> None:
    for n in range(60):
        client.start_orchestration(f"many-{n}", "Greeter", f"n{n}")
    for n in range(60):
        assert completed_output(client, f"many-{n}") == f"Hello, n{n}!"


def management_client_calls(client: Any) -> None:
    client.start_orchestration("mgmt-1", "Greeter", "mgmt")
    completed_output(client, "mgmt-1")

    assert "mgmt-1" in client.list_all_instances()
    assert "mgmt-1" in client.list_instances_by_status("Completed")
    info = client.get_instance_info("mgmt-1")
    assert info.orchestration_name == "Greeter" and info.status == "Completed"
    execution = client.get_execution_info("mgmt-1", 1)
    assert execution.status == "Completed" and execution.event_count >= 4
    history = client.read_execution_history("mgmt-1", 1)
    assert len(history) == execution.event_count
    metrics = client.get_system_metrics()
    assert metrics.total_instances >= 1 and metrics.completed_instances >= 1
    depths = client.get_queue_depths()
    assert depths.orchestrator_queue >= 0 and depths.worker_queue >= 0
    stats = client.get_orchestration_stats("mgmt-1")
    assert stats is not None

    pruned = client.prune_executions("mgmt-1", duroxide.PruneOptions(keep_last=1))
    assert pruned.executions_deleted == 0
    deleted = client.delete_instance("mgmt-1")
    assert deleted.instances_deleted == 1
    assert "mgmt-1" not in client.list_all_instances()

    # The bulk calls are inline SQL in duroxide, not procedures.
    for n in (2, 3):
        client.start_orchestration(f"mgmt-{n}", "Greeter", "mgmt")
        completed_output(client, f"mgmt-{n}")
    only_these = duroxide.InstanceFilter(instance_ids=["mgmt-2", "mgmt-3"])
    bulk_pruned = client.prune_executions_bulk(only_these, duroxide.PruneOptions(keep_last=1))
    assert bulk_pruned.executions_deleted == 0
    bulk_deleted = client.delete_instance_bulk(only_these)
    assert bulk_deleted.instances_deleted == 2


# The runtime's halves of the outbox groups: our provider wrote the starts
# and the event in the caller's transaction (tests/runtime/provider_writes.py).


def started_in_the_callers_transaction_completes(client: Any) -> None:
    assert completed_output(client, "outbox-1") == "Hello, order-7!"
    assert completed_output(client, "outbox-approve") == {"order": "order-7"}


def started_in_a_rolled_back_transaction_never_runs(client: Any) -> None:
    # outbox-2 was rolled back before outbox-3 was committed: once outbox-3
    # has run, a start of outbox-2 would have been read too.
    assert completed_output(client, "outbox-3") == "Hello, somebody!"
    assert client.get_status("outbox-2").status == "NotFound"


Group = Callable[[Any], None]

# The groups by the name of the suite's test of each (test_<name>), so that a
# report of either process reads the same. The last two need our provider's
# writes first; the nothing-to-migrate group reads the catalogue and runs in
# the suite's process only.
GROUPS: dict[str, Group] = {
    "activity_returns_its_result": activity_returns_its_result,
    "fan_out_fan_in_with_a_timer": fan_out_fan_in_with_a_timer,
    "external_event_reaches_the_waiting_orchestration": (
        external_event_reaches_the_waiting_orchestration
    ),
    "sub_orchestrations_report_to_their_parent": sub_orchestrations_report_to_their_parent,
    "continue_as_new_starts_new_executions_and_keeps_kv": (
        continue_as_new_starts_new_executions_and_keeps_kv
    ),
    "activity_retries_until_it_succeeds": activity_retries_until_it_succeeds,
    "session_activities_run_on_one_worker": session_activities_run_on_one_worker,
    "event_queue_buffers_messages_in_order": event_queue_buffers_messages_in_order,
    "key_value_state_is_readable_by_clients": key_value_state_is_readable_by_clients,
    "cancelling_an_instance_ends_it": cancelling_an_instance_ends_it,
    "many_concurrent_instances_all_complete": many_concurrent_instances_all_complete,
    "management_client_calls": management_client_calls,
    "an_orchestration_started_in_the_callers_transaction_completes": (
        started_in_the_callers_transaction_completes
    ),
    "an_orchestration_started_in_a_rolled_back_transaction_never_runs": (
        started_in_a_rolled_back_transaction_never_runs
    ),
}
