"""The signatures a running runtime depends on, and the migration rule that
keeps them: no run changes them.

A duroxide runtime prepares its statements once per connection. When a
function it calls gets another result row type, every later execution fails
with "cached plan must not change result type" (0A000) until the process
restarts; another argument list, and the call no longer resolves. So every
migration run reads the signatures of these functions before its first
revision and again before it commits, and refuses to commit a change
(provider/deploy/runner.py). A body replaced with CREATE OR REPLACE keeps its
signature and passes. A hub created from nothing has nothing to compare
with: new hubs get whatever head defines.

These functions are never dropped and created again either (in one
transaction that is atomic, but it gives the function a new oid and each
prepared statement a re-plan): a new body comes with CREATE OR REPLACE.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

# Every function of the contract that duroxide 0.2.2's provider calls
# (../shared/contract.md), hence every signature a running runtime has cached.
RUNTIME_FUNCTIONS = (
    "fetch_orchestration_item",
    "ack_orchestration_item",
    "abandon_orchestration_item",
    "renew_orchestration_item_lock",
    "enqueue_orchestrator_work",
    "enqueue_worker_work",
    "fetch_work_item",
    "ack_worker",
    "abandon_work_item",
    "renew_work_item_lock",
    "renew_session_lock",
    "cleanup_orphaned_sessions",
    "fetch_history",
    "fetch_history_with_execution",
    "append_history",
    "list_instances",
    "list_executions",
    "latest_execution_id",
    "list_instances_by_status",
    "get_instance_info",
    "get_execution_info",
    "get_system_metrics",
    "get_queue_depths",
    "list_children",
    "get_parent_id",
    "delete_instances_atomic",
    "prune_executions",
    "get_custom_status",
    "get_kv_value",
    "get_kv_all_values",
    "get_instance_stats",
    "cleanup_schema",
)

# name -> the (arguments with names and defaults, result) of each overload.
Signatures = dict[str, tuple[tuple[str, str], ...]]

# One parameter, %(schema)s: the quoted schema name (psycopg and SQLAlchemy's
# exec_driver_sql both take it).
SIGNATURES_QUERY = """
SELECT p.proname::text,
       pg_catalog.pg_get_function_arguments(p.oid),
       pg_catalog.pg_get_function_result(p.oid)
  FROM pg_catalog.pg_proc AS p
 WHERE p.pronamespace = to_regnamespace(%(schema)s)
   AND p.proname = ANY(%(names)s)
"""


def query_parameters(quoted_schema: str) -> dict[str, object]:
    return {"schema": quoted_schema, "names": list(RUNTIME_FUNCTIONS)}


def signatures_from_rows(rows: Iterable[tuple[str, str, str]]) -> Signatures:
    found: dict[str, list[tuple[str, str]]] = {}
    for name, arguments, result in rows:
        found.setdefault(name, []).append((arguments, result))
    return {name: tuple(sorted(overloads)) for name, overloads in found.items()}


def changes(
    before: Mapping[str, tuple[tuple[str, str], ...]],
    after: Signatures,
    allowed: Collection[str] = (),
) -> list[str]:
    """What a running runtime would trip over: each function that exists
    before and after and whose argument list or result type differs. (A
    downgrade below the revision that added a function drops it; that is the
    downgrade's meaning, not a change under a runtime's feet.) `allowed`: the
    functions a revision declares it changes (turn_form's switch back)."""
    found = []
    for name in sorted((before.keys() & after.keys()) - set(allowed)):
        if after[name] != before[name]:
            was = "; ".join(f"({args}) -> {result}" for args, result in before[name])
            now = "; ".join(f"({args}) -> {result}" for args, result in after[name])
            found.append(f"{name}: {was} became {now}")
    return found
