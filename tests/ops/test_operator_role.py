"""The operator role the runbook creates (docs/ops.md, "Who may do what"):
logged in as it, every verb of the runbook runs (check, status, inspect,
prune, requeue, release-lease, cancel, raise-event, delete-instance) and
the runbook's own psql steps, and nothing more: no fetch, no ack, no write
to a queue or an instance, no DDL, no message of its own making, no delay.
What it holds, as the catalogue says, is the list docs/ops.md documents; a
hub in `public` gives it no read of the application's tables beside it."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from devkit.roles import LoginRole, login_role, operator_of
from provider import TaskHub
from provider.cli import main
from provider.deploy import migrate
from provider.shapes import external_raised_item, runtime_work_item_text
from tests.support.busy_hub import make_busy
from tests.support.owned_hubs import take_back_create_on_public
from tests.support.paths import REPO
from tests.support.privileges import held, listed
from tests.validation.harness import finish_instance


@pytest.fixture
def operator(database_url: str, busy_hub: str) -> Iterator[LoginRole]:
    """A login role made an operator of the hub the way the runbook says."""
    with operator_of(database_url, busy_hub) as role:
        yield role


def as_operator(
    capsys: pytest.CaptureFixture[str], role: LoginRole, schema: str, *argv: str
) -> tuple[int, str]:
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as environment:
        # As docs/ops.md has it: the URL in the environment, not in ps.
        environment.setenv("DATABASE_URL", role.url)
        code = main([*argv, "--schema", schema])
    out, err = capsys.readouterr()
    return code, out + err


def test_the_operator_runs_every_verb_of_the_runbook(
    capsys: pytest.CaptureFixture[str], busy_hub: str, operator: LoginRole
) -> None:
    def ok(*argv: str) -> str:
        code, output = as_operator(capsys, operator, busy_hub, *argv)
        assert code == 0, (argv, output)
        assert "Traceback" not in output
        return output

    assert "no drift" in ok("check")
    ok("status")
    for view in ("queues", "leases", "poison", "dead-letters", "stuck", "instances"):
        ok("inspect", view)
    ok("inspect", "instance", "quiet")
    letters = json.loads(ok("inspect", "dead-letters", "--json"))
    ok("requeue", str(letters[0]["id"]))
    ok("release-lease", "leased-instance")
    ok("release-lease", "leased-instance", "--activities")
    ok("raise-event", "quiet", "Ping", '"hello"')
    ok("cancel", "quiet", "--yes")
    ok("delete-instance", "hot", "--yes")
    ok("prune", "--completed-before", "0s", "--yes")


def runbook_steps_for_operators() -> list[str]:
    """The psql steps of docs/ops.md before its deploy sections (those are the
    owner's and a superuser's)."""
    text = (REPO / "docs" / "ops.md").read_text()
    operating = text.split("## Deploying while the fleet runs")[0]
    return re.findall(r"```sql\n(.*?)```", operating, flags=re.S)


def test_the_operator_runs_the_runbooks_psql_steps(busy_hub: str, operator: LoginRole) -> None:
    steps = runbook_steps_for_operators()
    assert len(steps) >= 12
    with psycopg.connect(operator.url, autocommit=True) as conn:
        for step in steps:
            conn.execute(re.sub(r"\borders\b", f'"{busy_hub}"', step))


FORBIDDEN = [
    "SELECT * FROM {s}.fetch_orchestration_item(0, 30000)",
    "SELECT * FROM {s}.fetch_work_item(0, 30000)",
    "SELECT {s}.ack_worker('token', 'quiet', NULL)",
    "SELECT {s}.taskhub_grant_runtime_role('postgres')",
    "SELECT {s}.taskhub_record_definitions()",
    "SELECT {s}.cleanup_schema()",
    "INSERT INTO {s}.orchestrator_queue (instance_id, work_item, visible_at, created_at)"
    " VALUES ('x', '{{}}', now(), now())",
    "UPDATE {s}.instances SET orchestration_name = 'x'",
    "DELETE FROM {s}.history",
    "DELETE FROM {s}.dead_letters",
    "TRUNCATE {s}.worker_queue",
    "CREATE TABLE {s}.mine (id int)",
    "UPDATE {s}.taskhub_settings SET description = 'x'",
]


@pytest.mark.parametrize("statement", FORBIDDEN)
def test_the_operator_can_do_nothing_more(
    busy_hub: str, operator: LoginRole, statement: str
) -> None:
    with (
        psycopg.connect(operator.url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(statement.format(s=f'"{busy_hub}"'))


def test_revoking_takes_everything_back(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(
            f'SELECT "{busy_hub}".taskhub_revoke_operator_role(%s)', [operator.name]
        ).fetchone()
        assert row == (True,)
    with (
        psycopg.connect(operator.url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(f'SELECT * FROM "{busy_hub}".taskhub_queue_health')


def test_a_runtime_role_cannot_also_be_an_operator(database_url: str, hub_schema: str) -> None:
    with login_role(database_url) as role, psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            f'SELECT "{hub_schema}".taskhub_grant_runtime_role(%s, %s)', [role.name, "none"]
        )
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="runtime role"):
            conn.execute(f'SELECT "{hub_schema}".taskhub_grant_operator_role(%s)', [role.name])
        conn.execute(f'SELECT "{hub_schema}".taskhub_revoke_runtime_role(%s)', [role.name])


# -- what it holds, all of it --------------------------------------------------

_DOCUMENTED_ROW = re.compile(
    r"^\| (USAGE|SELECT|DELETE|EXECUTE|UPDATE(?: \((\w+)\))?) \| ([^|]*) \| [^|]* \|$", re.M
)


def documented() -> set[tuple[str, str]]:
    """The table of docs/ops.md's "Who may do what": what the operator holds."""
    text = (REPO / "docs" / "ops.md").read_text().split("## Who may do what")[1]
    found = set()
    for privilege, column, objects in _DOCUMENTED_ROW.findall(text):
        names = re.findall(r"`(\w+)`", objects)
        if privilege == "USAGE":
            names = ["<schema>"]
        elif column:
            privilege, names = "UPDATE", [f"{name}.{column}" for name in names]
        found |= {(privilege, name) for name in names}
    return found


def test_the_operator_holds_exactly_what_the_runbook_documents(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        holds = held(conn, operator.name, busy_hub)
        relations = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = %s::regnamespace"
            " AND relkind IN ('r', 'v')",
            [f'"{busy_hub}"'],
        ).fetchall()
        assert holds == documented()
        assert holds == listed(conn, busy_hub)
    # Every read of the runbook: each of the hub's tables and views, nothing else.
    assert {name for privilege, name in holds if privilege == "SELECT"} == {
        name for (name,) in relations
    }


# Arguments that carry what the runtime reads as a message, a completion or
# history, or a time to hold something back.
RAW_ARGUMENTS = {
    "p_work_item",
    "p_orchestrator_items",
    "p_worker_items",
    "p_completion_json",
    "p_history_delta",
    "p_metadata",
    "p_mutations",
    "p_cancelled_activities",
    "p_delay_ms",
    "p_visible_at",
    "p_extend_ms",
    "p_extend_secs",
    "p_lock_timeout_ms",
    "p_session_lock_timeout_ms",
}


def test_no_function_the_operator_may_call_takes_a_work_item_or_a_delay(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT p.proname, coalesce(p.proargnames, '{}'),"
            "       ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes) AS t)"
            "  FROM pg_proc AS p"
            " WHERE p.pronamespace = %s::regnamespace"
            "   AND has_function_privilege(%s, p.oid, 'EXECUTE')",
            [f'"{busy_hub}"', operator.name],
        ).fetchall()
    assert rows
    for name, arguments, types in rows:
        assert not RAW_ARGUMENTS & set(arguments), name
        assert not {"json", "jsonb", "json[]", "jsonb[]"} & set(types), name


FORGED_COMPLETION = json.dumps(
    {"ActivityCompleted": {"instance": "quiet", "execution_id": 1, "id": 1, "result": '"forged"'}}
)
SOMEONE_ELSES_START = json.dumps(
    {
        "StartOrchestration": {
            "instance": "evil",
            "orchestration": "TransferFunds",
            "input": '{"to": "mallory"}',
            "version": None,
            "parent_instance": None,
            "parent_id": None,
            "execution_id": 1,
        }
    }
)
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
CENTURY_MS = 100 * 365 * 86_400_000
RAW_WRITES = {
    "a forged completion": (
        "SELECT {s}.enqueue_orchestrator_work('quiet', %s, now())",
        [FORGED_COMPLETION],
    ),
    "a start of its choosing, traced": (
        "SELECT {s}.taskhub_enqueue_traced_orchestrator_work('evil', %s, now(), %s, NULL)",
        [SOMEONE_ELSES_START, TRACEPARENT],
    ),
    "an activity held back for a century": (
        "SELECT {s}.abandon_work_item(lock_token, NULL, %s)"
        "  FROM {s}.worker_queue WHERE lock_token IS NOT NULL",
        [CENTURY_MS],
    ),
}


@pytest.mark.parametrize(("statement", "params"), RAW_WRITES.values(), ids=RAW_WRITES.keys())
def test_the_operator_cannot_write_a_raw_work_item_nor_delay_an_activity(
    database_url: str, busy_hub: str, operator: LoginRole, statement: str, params: list[Any]
) -> None:
    with (
        psycopg.connect(operator.url, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute(statement.format(s=f'"{busy_hub}"'), params)
    with psycopg.connect(database_url, autocommit=True) as conn:
        later = conn.execute(
            f'SELECT count(*) FROM "{busy_hub}".worker_queue'
            " WHERE visible_at > now() + interval '1 hour'"
        ).fetchone()
        assert later == (0,)


def queued_for(conn: psycopg.Connection[Any], schema: str, instance_id: str) -> list[Any]:
    rows = conn.execute(
        f'SELECT work_item FROM "{schema}".orchestrator_queue WHERE instance_id = %s ORDER BY id',
        [instance_id],
    ).fetchall()
    return [json.loads(row[0]) for row in rows]


# A name and data that would break out of a message built by pasting text.
TRICKY_NAME = 'Approve"},"ActivityCompleted":{"x":"\u00e9\n\t\\'
TRICKY_DATA = {"by": 'ops"}}', "why": "é\n\u0001", "n": [1, 2.5, None, True]}


def test_the_hub_writes_the_clients_messages_for_the_operator(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    """What taskhub_cancel_instance and taskhub_raise_event queue is the text
    the duroxide client (and TaskHub) writes, whatever the name, reason and
    data hold; the operator chooses nothing else."""
    s = f'"{busy_hub}"'
    with psycopg.connect(operator.url, autocommit=True) as conn:
        status = conn.execute(
            f"SELECT {s}.taskhub_raise_event('quiet', %s, %s)",
            [TRICKY_NAME, json.dumps(TRICKY_DATA)],
        ).fetchone()
        assert status == ("Running",)
        conn.execute(f"SELECT {s}.taskhub_cancel_instance('quiet', %s)", [TRICKY_NAME])
    with psycopg.connect(database_url, autocommit=True) as conn:
        texts = conn.execute(
            f"SELECT work_item FROM {s}.orchestrator_queue WHERE instance_id = 'quiet' ORDER BY id"
        ).fetchall()
    assert [text for (text,) in texts] == [
        runtime_work_item_text(external_raised_item("quiet", TRICKY_NAME, TRICKY_DATA)),
        runtime_work_item_text({"CancelInstance": {"instance": "quiet", "reason": TRICKY_NAME}}),
    ]


REFUSED = {
    "cancel of an unknown instance": (
        "SELECT {s}.taskhub_cancel_instance('no-such-instance', 'x')",
        "no-such-instance",
        psycopg.errors.NoDataFound,
        "instance no-such-instance not found",
    ),
    "an event for an unknown instance": (
        "SELECT {s}.taskhub_raise_event('no-such-instance', 'Approve', 'true')",
        "no-such-instance",
        psycopg.errors.NoDataFound,
        "instance no-such-instance not found",
    ),
    "cancel of a completed instance": (
        "SELECT {s}.taskhub_cancel_instance('done', 'x')",
        "done",
        psycopg.errors.ObjectNotInPrerequisiteState,
        r"instance done already ended \(Completed\): nothing to cancel",
    ),
    "an event for a completed instance": (
        "SELECT {s}.taskhub_raise_event('done', 'Approve', 'true')",
        "done",
        psycopg.errors.ObjectNotInPrerequisiteState,
        r"instance done already ended \(Completed\): nobody waits for it",
    ),
    "an event whose data is not JSON": (
        "SELECT {s}.taskhub_raise_event('quiet', 'Approve', 'yes')",
        "quiet",
        psycopg.errors.InvalidParameterValue,
        "p_data must be a JSON text",
    ),
    "an event without a name": (
        "SELECT {s}.taskhub_raise_event('quiet', '', 'true')",
        "quiet",
        psycopg.errors.InvalidParameterValue,
        "p_name must be a non-empty text",
    ),
    "a trace context that is not one": (
        "SELECT {s}.taskhub_cancel_instance('quiet', 'x', '00-nonsense', NULL)",
        "quiet",
        psycopg.errors.InvalidParameterValue,
        "p_traceparent must be a W3C traceparent",
    ),
}


@pytest.fixture
def busy_hub_with_an_ended_instance(
    hub: TaskHub, hub_schema: str, sql: psycopg.Connection[Any]
) -> str:
    """The busy hub, and instance "done" completed before it got busy (an
    instance is ended by the turn a fetch hands out, the oldest first)."""
    finish_instance(hub, "done", "Completed", '"ok"')
    return make_busy(hub, hub_schema, sql)


@pytest.mark.parametrize(
    ("statement", "instance", "error", "message"), REFUSED.values(), ids=REFUSED.keys()
)
def test_a_message_the_hub_cannot_deliver_is_refused_and_nothing_is_written(
    database_url: str,
    busy_hub_with_an_ended_instance: str,
    statement: str,
    instance: str,
    error: type[psycopg.Error],
    message: str,
) -> None:
    schema = busy_hub_with_an_ended_instance
    with psycopg.connect(database_url, autocommit=True) as conn:
        before = queued_for(conn, schema, instance)
    with (
        operator_of(database_url, schema) as operator,
        psycopg.connect(operator.url, autocommit=True) as conn,
        pytest.raises(error, match=message),
    ):
        conn.execute(statement.format(s=f'"{schema}"'))
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert queued_for(conn, schema, instance) == before


def test_the_callers_trace_context_goes_with_an_operators_message(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    s = f'"{busy_hub}"'
    with psycopg.connect(operator.url, autocommit=True) as conn:
        conn.execute(f"SELECT {s}.taskhub_raise_event('quiet', 'Ping', 'null', %s)", [TRACEPARENT])
        context = conn.execute(f"SELECT traceparent FROM {s}.taskhub_trace_context('quiet')")
        assert context.fetchall() == [(TRACEPARENT,)]


def test_an_activity_released_by_the_operator_is_ready_at_once(
    database_url: str, busy_hub: str, operator: LoginRole
) -> None:
    s = f'"{busy_hub}"'
    with psycopg.connect(database_url, autocommit=True) as conn:
        ((token,),) = conn.execute(
            f"SELECT lock_token FROM {s}.worker_queue WHERE lock_token IS NOT NULL"
        ).fetchall()
    with psycopg.connect(operator.url, autocommit=True) as conn:
        release = f"SELECT {s}.taskhub_release_work_item_lease(%s)"
        assert conn.execute(release, [token]).fetchone() == (True,)
        assert conn.execute(release, [token]).fetchone() == (False,)  # nothing held any more
    with psycopg.connect(database_url, autocommit=True) as conn:
        ready = conn.execute(
            f"SELECT lock_token IS NULL, visible_at <= clock_timestamp(), attempt_count"
            f"  FROM {s}.worker_queue"
        ).fetchall()
        assert ready == [(True, True, 1)]
        # The gone worker's late ack is refused: its lease is lost (TH001).
        with pytest.raises(psycopg.Error) as refused:
            conn.execute(f"SELECT {s}.ack_worker(%s, 'leased-instance', NULL)", [token])
        assert refused.value.sqlstate == "TH001"


THRESHOLDS = ["fifty", "1", "0", "-5", "", " 50", "5.0", "1e3", "99999999999"]


@pytest.mark.parametrize("value", THRESHOLDS)
def test_a_threshold_that_is_not_a_whole_number_of_2_or_more_is_refused(
    database_url: str, busy_hub: str, operator: LoginRole, value: str
) -> None:
    update = (
        f'UPDATE "{busy_hub}".taskhub_settings SET value = %s'
        " WHERE name = 'dead_letter_after_attempts'"
    )
    with psycopg.connect(operator.url, autocommit=True) as conn:
        with pytest.raises(
            psycopg.errors.CheckViolation,
            match="dead_letter_after_attempts_is_a_whole_number_of_2_or_more",
        ):
            conn.execute(update, [value])
        read = (
            f'SELECT value FROM "{busy_hub}".taskhub_settings'
            " WHERE name = 'dead_letter_after_attempts'"
        )
        assert conn.execute(read).fetchone() == ("50",)
        conn.execute(update, ["2"])
        assert conn.execute(read).fetchone() == ("2",)


# -- a hub in `public`, beside an application's tables --------------------------


def test_a_public_hubs_operator_cannot_read_the_applications_tables(
    capsys: pytest.CaptureFixture[str], fresh_database: str
) -> None:
    take_back_create_on_public(fresh_database)  # a superuser migrates it (PostgreSQL 14)
    with psycopg.connect(fresh_database, autocommit=True) as conn:
        conn.execute("CREATE TABLE public.customers (id int, card_number text)")
    migrate.upgrade(fresh_database, "public")
    with login_role(fresh_database, prefix="operator") as operator:
        with psycopg.connect(fresh_database, autocommit=True) as conn:
            conn.execute("SELECT public.taskhub_grant_operator_role(%s)", [operator.name])
            # A table the application adds later, and a migration run that re-grants.
            conn.execute("CREATE TABLE public.payments (id int)")
            conn.execute("SELECT public.taskhub_refresh_runtime_roles()")
        with psycopg.connect(operator.url, autocommit=True) as conn:
            for table in ("customers", "payments"):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(f"SELECT * FROM public.{table}")
            conn.execute("SELECT * FROM public.taskhub_queue_health")
        capsys.readouterr()
        assert main(["status", "--url", operator.url, "--schema", "public"]) == 0
