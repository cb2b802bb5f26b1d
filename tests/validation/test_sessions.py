"""Port of duroxide's provider validation suite, §3.18 sessions (33 tests).

Session routing: worker items with the same session_id go to the worker
(owner) that holds the session. SessionFetchConfig{owner, lock_timeout} is
`fetch_work_item(lock_ms, owner_id=owner, session_lock_timeout_ms=lock_timeout)`;
no session config is `fetch_work_item(lock_ms)`. The worker item lock is 5 s
unless stated. Tests of a lapsed lock move the hub's test clock past its end
(tests/support/server_clock.py) instead of sleeping.
"""

from __future__ import annotations

import contextlib
from typing import Any

from devkit.waiting import wait_until
from provider import TaskHub, TaskHubError, WorkItemLease
from tests.support.server_clock import MoveClock
from tests.validation.harness import activity_completed, activity_execute

ITEM_LOCK = 5_000
SESSION_LOCK = 30_000


def session_activity(instance: str, activity_id: int, session_id: str) -> dict[str, Any]:
    """SA(X, id, sid)."""
    return activity_execute(instance, activity_id, name="SessionActivity", session_id=session_id)


def plain_activity(instance: str, activity_id: int) -> dict[str, Any]:
    """PA(X, id)."""
    return activity_execute(instance, activity_id, name="PlainActivity")


def fetch_session(
    provider: TaskHub,
    owner: str,
    session_lock_ms: int = SESSION_LOCK,
    item_lock_ms: int = ITEM_LOCK,
) -> WorkItemLease | None:
    """fetchW(item lock, cfgL(owner, session lock))."""
    return provider.fetch_work_item(
        item_lock_ms, owner_id=owner, session_lock_timeout_ms=session_lock_ms
    )


def must_fetch_session(
    provider: TaskHub,
    owner: str,
    session_lock_ms: int = SESSION_LOCK,
    item_lock_ms: int = ITEM_LOCK,
) -> WorkItemLease:
    lease = fetch_session(provider, owner, session_lock_ms, item_lock_ms)
    assert lease is not None, f"{owner} should fetch an item"
    return lease


def claim_session(
    provider: TaskHub,
    owner: str,
    instance: str,
    session_id: str,
    session_lock_ms: int = SESSION_LOCK,
    activity_id: int = 1,
) -> None:
    """Enqueue SA(X, id, sid); the owner fetches it (claiming the session) and acks None."""
    provider.enqueue_worker_work(session_activity(instance, activity_id, session_id))
    lease = must_fetch_session(provider, owner, session_lock_ms)
    provider.ack_work_item(lease.lock_token, None)


def body(lease: WorkItemLease) -> dict[str, Any]:
    execute = lease.work_item["ActivityExecute"]
    assert isinstance(execute, dict)
    return execute


# --- Basic session routing ---------------------------------------------------------------


def test_non_session_items_fetchable_by_any_worker(provider: TaskHub) -> None:
    provider.enqueue_worker_work(plain_activity("inst-1", 1))
    assert fetch_session(provider, "worker-A") is not None


def test_session_item_claimable_when_no_session(provider: TaskHub) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "session-1"))
    lease = fetch_session(provider, "worker-A")
    assert lease is not None
    assert body(lease).get("session_id") == "session-1"


def test_session_affinity_same_worker(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1")
    provider.enqueue_worker_work(session_activity("inst-1", 2, "session-1"))
    assert fetch_session(provider, "worker-A") is not None


def test_session_affinity_blocks_other_worker(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1")
    provider.enqueue_worker_work(session_activity("inst-1", 2, "session-1"))
    assert fetch_session(provider, "worker-B") is None


def test_different_sessions_different_workers(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1")
    claim_session(provider, "worker-B", "inst-2", "session-2")
    provider.enqueue_worker_work(session_activity("inst-1", 2, "session-1"))
    provider.enqueue_worker_work(session_activity("inst-2", 2, "session-2"))

    lease_a = fetch_session(provider, "worker-A")
    assert lease_a is not None
    assert body(lease_a).get("session_id") == "session-1"
    lease_b = fetch_session(provider, "worker-B")
    assert lease_b is not None
    assert body(lease_b).get("session_id") == "session-2"


def test_mixed_session_and_non_session_items(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1")
    provider.enqueue_worker_work(session_activity("inst-1", 2, "session-1"))
    provider.enqueue_worker_work(plain_activity("inst-2", 1))

    lease = fetch_session(provider, "worker-B")
    assert lease is not None, "worker-B should get the plain item"
    assert body(lease).get("session_id") is None


# --- Session locks and expiry ------------------------------------------------------------


def test_session_claimable_after_lock_expiry(provider: TaskHub, move_clock: MoveClock) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1", session_lock_ms=50)
    move_clock(provider, 100)  # past the 50 ms session lock
    provider.enqueue_worker_work(session_activity("inst-1", 2, "session-1"))
    assert fetch_session(provider, "worker-B") is not None


def test_none_session_skips_session_items(provider: TaskHub) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "session-1"))
    provider.enqueue_worker_work(plain_activity("inst-2", 2))

    lease = provider.fetch_work_item(ITEM_LOCK)
    assert lease is not None
    assert body(lease).get("session_id") is None
    assert body(lease)["id"] == 2
    provider.ack_work_item(lease.lock_token, None)

    assert provider.fetch_work_item(ITEM_LOCK) is None, "session items are invisible without cfg"

    session_lease = fetch_session(provider, "worker-A")
    assert session_lease is not None
    assert body(session_lease).get("session_id") == "session-1"


def test_some_session_returns_all_items(provider: TaskHub) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "sess-A"))
    provider.enqueue_worker_work(session_activity("inst-2", 2, "sess-B"))
    provider.enqueue_worker_work(session_activity("inst-3", 3, "sess-C"))
    provider.enqueue_worker_work(plain_activity("inst-4", 4))

    fetched = []
    for _ in range(4):
        lease = must_fetch_session(provider, "shared-proc")
        fetched.append(body(lease)["id"])
        provider.ack_work_item(lease.lock_token, None)
    assert fetched == [1, 2, 3, 4]
    assert fetch_session(provider, "shared-proc") is None


# --- Session lock renewal ----------------------------------------------------------------


def test_renew_session_lock_active(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1", session_lock_ms=5_000)
    assert provider.renew_session_lock(["worker-A"], 30_000, 300_000) == 1

    claim_session(provider, "worker-A", "inst-2", "session-2")
    assert provider.renew_session_lock(["worker-A"], 30_000, 300_000) == 2


def test_renew_session_lock_skips_idle(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1")
    assert provider.renew_session_lock(["worker-A"], 30_000, 0) == 0


def test_renew_session_lock_no_sessions(provider: TaskHub) -> None:
    assert provider.renew_session_lock(["worker-A"], 30_000, 300_000) == 0


def test_cleanup_removes_expired_no_items(provider: TaskHub, move_clock: MoveClock) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1", session_lock_ms=50)
    move_clock(provider, 100)  # past the 50 ms session lock
    assert provider.cleanup_orphaned_sessions() == 1


def test_cleanup_keeps_sessions_with_pending_items(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1", session_lock_ms=50)
    provider.enqueue_worker_work(session_activity("inst-1", 2, "session-1"))
    move_clock(provider, 100)  # past the 50 ms session lock
    assert provider.cleanup_orphaned_sessions() == 0


def test_cleanup_keeps_active_sessions(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1", session_lock_ms=300_000)
    assert provider.cleanup_orphaned_sessions() == 0


def test_ack_updates_session_last_activity(provider: TaskHub, move_clock: MoveClock) -> None:
    """Acking a session item bumps the session's last activity, so it is not idle."""
    provider.enqueue_worker_work(session_activity("inst-1", 1, "session-1"))
    lease = must_fetch_session(provider, "worker-A")
    move_clock(provider, 250)  # idle longer than the 200 ms idle timeout below
    provider.ack_work_item(lease.lock_token, activity_completed("inst-1", 1, "done"))
    assert provider.renew_session_lock(["worker-A"], 30_000, 200) == 1


def test_renew_work_item_updates_session_last_activity(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    """Renewing a session item's lock bumps the session's last activity too."""
    provider.enqueue_worker_work(session_activity("inst-1", 1, "session-1"))
    lease = must_fetch_session(provider, "worker-A")
    move_clock(provider, 250)  # idle longer than the 200 ms idle timeout below
    provider.renew_work_item_lock(lease.lock_token, 30_000)
    assert provider.renew_session_lock(["worker-A"], 30_000, 200) == 1


# --- Ordering and ownership --------------------------------------------------------------


def test_session_items_processed_in_order(provider: TaskHub) -> None:
    for activity_id in (1, 2, 3):
        provider.enqueue_worker_work(session_activity("inst-1", activity_id, "ordered-sess"))
    fetched = []
    for _ in range(3):
        lease = must_fetch_session(provider, "worker-A")
        fetched.append(body(lease)["id"])
        provider.ack_work_item(lease.lock_token, None)
    assert fetched == [1, 2, 3]


def test_non_session_items_returned_with_session_config(provider: TaskHub) -> None:
    claim_session(provider, "worker-A", "inst-1", "session-1")
    provider.enqueue_worker_work(plain_activity("inst-2", 1))
    lease = fetch_session(provider, "worker-A")
    assert lease is not None
    assert body(lease)["name"] == "PlainActivity"
    assert body(lease).get("session_id") is None


def test_shared_worker_id_any_caller_can_fetch_owned_session(provider: TaskHub) -> None:
    """Ownership is by owner id: any caller with the owning id gets the session's items."""
    provider.enqueue_worker_work(session_activity("inst-1", 1, "shared-sess"))
    provider.enqueue_worker_work(session_activity("inst-1", 2, "shared-sess"))

    first = must_fetch_session(provider, "process-1")
    assert body(first)["id"] == 1
    provider.ack_work_item(first.lock_token, None)
    second = must_fetch_session(provider, "process-1")
    assert body(second)["id"] == 2
    provider.ack_work_item(second.lock_token, None)

    provider.enqueue_worker_work(session_activity("inst-1", 3, "shared-sess"))
    assert fetch_session(provider, "process-2") is None


def test_concurrent_session_claim_only_one_wins(provider: TaskHub) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "contested-sess"))
    provider.enqueue_worker_work(session_activity("inst-1", 2, "contested-sess"))

    lease_a = fetch_session(provider, "worker-A")
    assert lease_a is not None
    assert fetch_session(provider, "worker-B") is None, "the session belongs to worker-A"
    provider.ack_work_item(lease_a.lock_token, None)


def test_session_takeover_after_lock_expiry(provider: TaskHub, move_clock: MoveClock) -> None:
    claim_session(provider, "worker-A", "inst-1", "takeover-sess", session_lock_ms=50)
    provider.enqueue_worker_work(session_activity("inst-1", 2, "takeover-sess"))
    move_clock(provider, 100)  # past the 50 ms session lock
    lease = fetch_session(provider, "worker-B")
    assert lease is not None
    assert body(lease).get("session_id") == "takeover-sess"


def test_cleanup_then_new_item_recreates_session(provider: TaskHub, move_clock: MoveClock) -> None:
    claim_session(provider, "worker-A", "inst-1", "ephemeral-sess", session_lock_ms=50)
    move_clock(provider, 100)  # past the 50 ms session lock
    assert provider.cleanup_orphaned_sessions() == 1

    provider.enqueue_worker_work(session_activity("inst-1", 2, "ephemeral-sess"))
    lease = fetch_session(provider, "worker-B")
    assert lease is not None
    assert body(lease)["id"] == 2
    assert body(lease).get("session_id") == "ephemeral-sess"


# --- Abandon and retry -------------------------------------------------------------------


def test_abandoned_session_item_retryable(provider: TaskHub) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "retry-sess"))
    first = must_fetch_session(provider, "worker-A")
    assert first.attempt_count == 1
    assert body(first)["id"] == 1
    provider.abandon_work_item(first.lock_token, delay_ms=None, ignore_attempt=False)

    second = must_fetch_session(provider, "worker-A")
    assert second.attempt_count == 2
    assert body(second)["id"] == 1
    provider.ack_work_item(second.lock_token, None)
    assert fetch_session(provider, "worker-A") is None


def test_abandoned_session_item_ignore_attempt(provider: TaskHub) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "ignore-sess"))
    first = must_fetch_session(provider, "worker-A")
    assert first.attempt_count == 1
    provider.abandon_work_item(first.lock_token, delay_ms=1, ignore_attempt=True)

    second = wait_until(lambda: fetch_session(provider, "worker-A"), message="item 1 back")
    assert second.attempt_count == 1, "ignore_attempt undoes the first attempt"
    provider.ack_work_item(second.lock_token, None)


# --- Session lock vs. item lock ----------------------------------------------------------


def test_renew_session_lock_after_expiry_returns_zero(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    claim_session(provider, "worker-A", "inst-1", "expired-sess", session_lock_ms=50)
    move_clock(provider, 100)  # past the 50 ms session lock
    assert provider.renew_session_lock(["worker-A"], 30_000, 300_000) == 0


def test_original_worker_reclaims_expired_session(provider: TaskHub, move_clock: MoveClock) -> None:
    claim_session(provider, "worker-A", "inst-1", "reclaim-sess", session_lock_ms=50)
    provider.enqueue_worker_work(session_activity("inst-1", 2, "reclaim-sess"))
    move_clock(provider, 100)  # past the 50 ms session lock
    lease = fetch_session(provider, "worker-A")
    assert lease is not None
    assert body(lease)["id"] == 2
    assert body(lease).get("session_id") == "reclaim-sess"


def test_activity_lock_expires_session_lock_valid_same_worker_refetches(
    provider: TaskHub,
    move_clock: MoveClock,
) -> None:
    """The item lease lapses while worker-A still holds the session: only A gets it back."""
    provider.enqueue_worker_work(session_activity("inst-1", 1, "activity-expire-sess"))
    first = must_fetch_session(provider, "worker-A", item_lock_ms=500)
    assert body(first)["id"] == 1
    move_clock(provider, 600)  # past the 500 ms item lock, well inside the session lock

    assert fetch_session(provider, "worker-B") is None, "worker-A still owns the session"
    again = fetch_session(provider, "worker-A")
    assert again is not None
    assert body(again)["id"] == 1
    assert again.attempt_count == 2
    provider.ack_work_item(again.lock_token, None)


def test_session_lock_expires_new_owner_gets_redelivery(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    """Worker-A's session lapses while it still holds item 1: worker-B takes the session,
    and once A lets item 1 go, B gets it redelivered."""
    provider.enqueue_worker_work(session_activity("inst-1", 1, "redeliver-sess"))
    held = must_fetch_session(provider, "worker-A", session_lock_ms=200)
    assert body(held)["id"] == 1
    move_clock(provider, 300)  # past the 200 ms session lock

    provider.enqueue_worker_work(session_activity("inst-1", 2, "redeliver-sess"))
    second = fetch_session(provider, "worker-B")
    assert second is not None
    assert body(second)["id"] == 2
    provider.ack_work_item(second.lock_token, None)

    with contextlib.suppress(TaskHubError):  # the suite ignores this abandon's result
        provider.abandon_work_item(held.lock_token, delay_ms=None, ignore_attempt=False)

    redelivered = fetch_session(provider, "worker-B")
    assert redelivered is not None
    assert body(redelivered)["id"] == 1
    assert redelivered.attempt_count == 2
    provider.ack_work_item(redelivered.lock_token, None)


def test_session_lock_expires_same_worker_reacquires(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    claim_session(provider, "worker-A", "inst-1", "reacq-sess", session_lock_ms=200)
    move_clock(provider, 300)  # past the 200 ms session lock
    provider.enqueue_worker_work(session_activity("inst-1", 2, "reacq-sess"))
    lease = fetch_session(provider, "worker-A", session_lock_ms=200)
    assert lease is not None
    assert body(lease)["id"] == 2
    assert body(lease).get("session_id") == "reacq-sess"
    provider.ack_work_item(lease.lock_token, None)


def test_both_locks_expire_different_worker_claims(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    provider.enqueue_worker_work(session_activity("inst-1", 1, "both-expire-sess"))
    must_fetch_session(provider, "worker-A", session_lock_ms=200, item_lock_ms=200)
    move_clock(provider, 400)  # past both 200 ms locks

    lease = fetch_session(provider, "worker-B")
    assert lease is not None
    assert body(lease)["id"] == 1
    assert body(lease).get("session_id") == "both-expire-sess"
    assert lease.attempt_count == 2
    provider.ack_work_item(lease.lock_token, None)


def test_session_lock_expires_activity_lock_valid_ack_succeeds(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    """The item lease, not the session lock, decides whether an ack succeeds."""
    provider.enqueue_worker_work(session_activity("inst-1", 1, "ack-sess"))
    lease = must_fetch_session(provider, "worker-A", session_lock_ms=200, item_lock_ms=30_000)
    move_clock(provider, 300)  # past the 200 ms session lock
    provider.ack_work_item(lease.lock_token, activity_completed("inst-1", 1, "done"))


def test_session_lock_renewal_extends_past_original_timeout(
    provider: TaskHub, move_clock: MoveClock
) -> None:
    claim_session(provider, "worker-A", "inst-1", "renew-sess", session_lock_ms=1_000)
    move_clock(provider, 600)  # renewed 0.6 s in, for 1 s: the lock then ends at about 1.6 s
    assert provider.renew_session_lock(["worker-A"], 1_000, 300_000) == 1
    move_clock(provider, 500)  # past the original 1 s lock, inside the renewed one

    provider.enqueue_worker_work(session_activity("inst-1", 2, "renew-sess"))
    assert fetch_session(provider, "worker-B") is None
    assert fetch_session(provider, "worker-A") is not None
