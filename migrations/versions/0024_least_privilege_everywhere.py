"""Least privilege everywhere: on every supported major and managed service.

* A membership that gives a role neither another's privileges nor the right
  to become it is not sharing: from PostgreSQL 16 on, a non-superuser with
  CREATEROLE is an admin-option member (INHERIT and SET off) of every role it
  creates, as every managed console creates roles. The grants test what a
  role can use or become (taskhub_shares_rights, new); the DDL guard refuses
  DDL to a role acting as, or inheriting from, a guarded one (USAGE), so the
  admin that created the runtime role keeps its own DDL.
* runtime_ddl 'guarded' asks whether the role can create an event trigger
  (taskhub_can_create_event_triggers, new: tried in a subtransaction), not
  whether it is a superuser: a managed service's admin may. Such an admin
  may not put a custom setting on a function (PostgreSQL 15+ keeps that for
  superusers), so where it cannot, the guard's list of roles goes in the
  function's comment instead (taskhub_guard_roles_of, new, reads either;
  taskhub_rebuild_runtime_ddl_guard, the guard's body, and the two checks of
  the list use it). A downgrade refuses while a comment holds the list.
* The guard's function belongs to whoever created the event trigger: its new
  body goes in only where the run may put it there, keeping its list of
  roles (provider/deploy/ddl_guard.py); elsewhere the run warns, and the
  next `taskhub-pg grant-runtime-role` of that role puts it in.
* Before PostgreSQL 15, PUBLIC may CREATE in schema public: a grant takes
  back a CREATE there that the runtime role holds by a grant of its own
  (`taskhub-pg check` reports a runtime role without DDL that may still
  create there through PUBLIC).
* No row can wedge an instance, whatever the server's parser can do. The
  released runtime decodes a fetch's history and messages with serde_json,
  whose recursion limit (128) leaves 127 levels of arrays and objects, one
  of them the array the fetch hands over: a row 127 deep failed every fetch
  of its instance, never poisoned (measured). taskhub_max_json_depth is 126
  (was 500); every write refuses deeper (22023, nothing written), activity
  items of an ack and enqueue_worker_work too; the prefilter counts brackets
  (taskhub_json_openers, new) instead of bytes; the fetch hands a stored row
  deeper than that over as a JSON string (taskhub_json_too_deep and
  taskhub_raise_if_turn_too_deep, new; taskhub_try_jsonb), as it does a row
  the server cannot parse, and the runtime poisons that instance alone.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-03
"""

from __future__ import annotations

from provider.deploy.migration_steps import (
    apply_sql_files,
    drop_functions,
    replace_fetch_keeping_its_form,
    replace_with_released,
)

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

# The tables this revision alters, drops or indexes: every run that applies it
# locks them up front, in the hot path's order (provider/deploy/table_locks.py).
# A run that takes a strong lock on a table not named here is refused.
LOCKS_ON_UPGRADE: list[str] = []
LOCKS_ON_DOWNGRADE: list[str] = []

# This revision's files, applied in order: its functions' versions
# (sql/functions/<name>/0024.sql, whole or a patch on the version before).
FILES: list[str] = [
    "functions/taskhub_guard_roles_of/0024.sql",
    "functions/taskhub_shares_rights/0024.sql",
    "functions/taskhub_can_create_event_triggers/0024.sql",
    "functions/taskhub_grant_operator_role/0024.sql",
    "functions/taskhub_grant_runtime_role/0024.sql",
    "functions/taskhub_set_runtime_privileges/0024.sql",
    "functions/taskhub_database_create_needed_elsewhere/0024.sql",
    "functions/taskhub_rebuild_runtime_ddl_guard/0024.sql",
    "functions/taskhub_refuse_runtime_ddl/0024.sql",
    "functions/taskhub_max_json_depth/0024.sql",
    "functions/taskhub_json_openers/0024.sql",
    "functions/taskhub_json_too_deep/0024.sql",
    "functions/taskhub_unstorable_json/0024.sql",
    "functions/taskhub_try_jsonb/0024.sql",
    "functions/taskhub_raise_if_turn_too_deep/0024.sql",
    "functions/ack_orchestration_item/0024.sql",
    "functions/enqueue_orchestrator_work/0024.sql",
    "functions/ack_worker/0024.sql",
    "functions/enqueue_worker_work/0024.sql",
]
# The fetch's __TURN_FORM__ is json or jsonb: it is replaced in the form the
# hub's fetch hands over now (provider/deploy/turn_form.py), both ways.
FETCH = "functions/fetch_orchestration_item/0024.sql"
RELEASED_FETCH = "functions/fetch_orchestration_item/0022.sql"
# Replaced in place (CREATE OR REPLACE keeps their grants); the downgrade puts
# back these functions of the released files.
REPLACED: dict[str, list[str]] = {
    "functions/taskhub_grant_operator_role/0016.sql": ["taskhub_grant_operator_role"],
    "functions/taskhub_grant_runtime_role/0023.sql": ["taskhub_grant_runtime_role"],
    "functions/taskhub_set_runtime_privileges/0023.sql": ["taskhub_set_runtime_privileges"],
    "functions/taskhub_rebuild_runtime_ddl_guard/0023.sql": ["taskhub_rebuild_runtime_ddl_guard"],
    "0005_least_privilege/runtime_roles.sql": ["taskhub_database_create_needed_elsewhere"],
    "0007_fault_tolerance/json_limits.sql": [
        "taskhub_max_json_depth",
        "taskhub_unstorable_json",
        "taskhub_try_jsonb",
    ],
    "functions/ack_orchestration_item/0022.sql": ["ack_orchestration_item"],
    "functions/enqueue_orchestrator_work/0022.sql": ["enqueue_orchestrator_work"],
    "functions/ack_worker/0022.sql": ["ack_worker"],
    "functions/enqueue_worker_work/0022.sql": ["enqueue_worker_work"],
}
# New in this revision: dropped by the downgrade.
NEW_FUNCTIONS: list[str] = [
    "taskhub_guard_roles_of",
    "taskhub_can_create_event_triggers",
    "taskhub_shares_rights",
    "taskhub_json_openers",
    "taskhub_json_too_deep",
    "taskhub_raise_if_turn_too_deep",
]


def upgrade() -> None:
    # Last: like every function of the schema, the new ones are not
    # executable by PUBLIC.
    apply_sql_files(FILES)
    replace_fetch_keeping_its_form(FETCH)
    apply_sql_files(["0006_hot_path/no_public_execute.sql"])


def downgrade() -> None:
    apply_sql_files(
        [
            "0024_least_privilege_everywhere/down_guard_list_held_by_comment.sql",
            "0024_least_privilege_everywhere/down_taskhub_refuse_runtime_ddl.sql",
        ]
    )
    replace_fetch_keeping_its_form(RELEASED_FETCH)
    replace_with_released(list(REPLACED), REPLACED)
    drop_functions(NEW_FUNCTIONS)
