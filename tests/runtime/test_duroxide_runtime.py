"""The released duroxide 0.2.2 runtime, unchanged, on a schema our Alembic
migrations created: every feature it has, checked by its outcomes.

The scenario groups are in scenarios.py (which another release runs too:
test_released_runtimes.py); here each is one test, in each way the runtime
may log in (login_modes.py). One runtime serves each way (it is slow to
start and stop); every group uses its own instance ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duroxide
import psycopg
import pytest

from devkit.roles import LoginRole
from tests.runtime import provider_writes, scenarios
from tests.runtime.login_modes import MODES, hub_for

# Other tiers run these tests on hubs of their own (tests/citus/,
# tests/deploy/test_managed_admin.py) with these helpers.
from tests.runtime.scenarios import approve_when_waiting as approve_when_waiting
from tests.runtime.scenarios import completed_output as completed_output
from tests.runtime.scenarios import register as register


@dataclass
class RuntimeOnOurSchema:
    client: Any
    schema: str
    url: str  # the tests' admin, for our provider's writes and the catalogue


@pytest.fixture(scope="module", params=MODES)
def runtime(
    request: pytest.FixtureRequest, database_url: str, runtime_login: LoginRole
) -> Iterator[RuntimeOnOurSchema]:
    with hub_for(request.param, database_url, runtime_login) as login:
        provider = duroxide.PostgresProvider.connect_with_schema(login.url, login.schema)
        runtime = duroxide.Runtime(provider, duroxide.RuntimeOptions(**scenarios.RUNTIME_OPTIONS))
        scenarios.register(runtime)
        runtime.start()
        try:
            yield RuntimeOnOurSchema(duroxide.Client(provider), login.schema, database_url)
        finally:
            runtime.shutdown(timeout_ms=2_000)


def test_connecting_finds_nothing_to_migrate(runtime: RuntimeOnOurSchema) -> None:
    with psycopg.connect(runtime.url) as conn:
        row = conn.execute(
            "SELECT pg_get_functiondef(%s::regprocedure)",
            [f'"{runtime.schema}".fetch_orchestration_item(bigint, bigint, bigint, bigint)'],
        ).fetchone()
    assert row is not None and "pg_try_advisory_xact_lock" in str(row[0])


def test_activity_returns_its_result(runtime: RuntimeOnOurSchema) -> None:
    scenarios.activity_returns_its_result(runtime.client)


def test_fan_out_fan_in_with_a_timer(runtime: RuntimeOnOurSchema) -> None:
    scenarios.fan_out_fan_in_with_a_timer(runtime.client)


def test_external_event_reaches_the_waiting_orchestration(runtime: RuntimeOnOurSchema) -> None:
    scenarios.external_event_reaches_the_waiting_orchestration(runtime.client)


def test_sub_orchestrations_report_to_their_parent(runtime: RuntimeOnOurSchema) -> None:
    scenarios.sub_orchestrations_report_to_their_parent(runtime.client)


def test_continue_as_new_starts_new_executions_and_keeps_kv(runtime: RuntimeOnOurSchema) -> None:
    scenarios.continue_as_new_starts_new_executions_and_keeps_kv(runtime.client)


def test_activity_retries_until_it_succeeds(runtime: RuntimeOnOurSchema) -> None:
    scenarios.activity_retries_until_it_succeeds(runtime.client)


def test_session_activities_run_on_one_worker(runtime: RuntimeOnOurSchema) -> None:
    scenarios.session_activities_run_on_one_worker(runtime.client)


def test_event_queue_buffers_messages_in_order(runtime: RuntimeOnOurSchema) -> None:
    scenarios.event_queue_buffers_messages_in_order(runtime.client)


def test_key_value_state_is_readable_by_clients(runtime: RuntimeOnOurSchema) -> None:
    scenarios.key_value_state_is_readable_by_clients(runtime.client)


def test_cancelling_an_instance_ends_it(runtime: RuntimeOnOurSchema) -> None:
    scenarios.cancelling_an_instance_ends_it(runtime.client)


def test_many_concurrent_instances_all_complete(runtime: RuntimeOnOurSchema) -> None:
    scenarios.many_concurrent_instances_all_complete(runtime.client)


def test_management_client_calls(runtime: RuntimeOnOurSchema) -> None:
    scenarios.management_client_calls(runtime.client)


def test_an_orchestration_started_in_the_callers_transaction_completes(
    runtime: RuntimeOnOurSchema,
) -> None:
    """The outbox: the starts and later an event are written with the
    caller's own rows, in its transaction; the runtime sees each once it
    commits."""
    provider_writes.start_in_callers_transaction(runtime.url, runtime.schema)
    provider_writes.approve_once_listening(runtime.url, runtime.schema)
    scenarios.started_in_the_callers_transaction_completes(runtime.client)


def test_an_orchestration_started_in_a_rolled_back_transaction_never_runs(
    runtime: RuntimeOnOurSchema,
) -> None:
    provider_writes.start_rolled_back_then_committed(runtime.url, runtime.schema)
    scenarios.started_in_a_rolled_back_transaction_never_runs(runtime.client)
