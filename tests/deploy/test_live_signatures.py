"""No deploy changes what a running runtime has prepared: the argument list
and result row type of every function it calls stay as duroxide 0.2.2 has
them, through adoption, every revision up and down, and sql/head. A run that
would change one is refused and changes nothing."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from devkit.schema.head_schema import apply_head
from provider.deploy import live_signatures, migrate
from provider.deploy.refusals import RuntimeSignaturesChanged
from tests.support.contract import CONTRACT_FUNCTIONS, turn_as_json
from tests.support.db import new_schema_name
from tests.support.extra_revision import migrations_with_revision, upgrade_with
from tests.support.flavours import DUROXIDE_0_2_2, TASKHUB_JSONB

REVISIONS = [f"{n:04d}" for n in range(1, int(migrate.head_revision()) + 1)]

# fetch_orchestration_item as the hot-path issue would like it: out_history json.
JSON_HISTORY = """
DROP FUNCTION {schema}.fetch_orchestration_item(bigint, bigint, bigint, bigint);
CREATE FUNCTION {schema}.fetch_orchestration_item(
    p_now_ms bigint, p_lock_timeout_ms bigint,
    p_min_version_packed bigint DEFAULT NULL, p_max_version_packed bigint DEFAULT NULL)
RETURNS TABLE(out_instance_id text, out_orchestration_name text,
              out_orchestration_version text, out_execution_id bigint, out_history json,
              out_messages jsonb, out_lock_token text, out_attempt_count integer,
              out_kv_snapshot jsonb)
LANGUAGE sql AS 'SELECT NULL::text, NULL::text, NULL::text, NULL::bigint, NULL::json,
                        NULL::jsonb, NULL::text, NULL::integer, NULL::jsonb WHERE false'
"""


def signatures(url: str, schema: str) -> live_signatures.Signatures:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            live_signatures.SIGNATURES_QUERY, live_signatures.query_parameters(f'"{schema}"')
        ).fetchall()
    return live_signatures.signatures_from_rows(rows)


def test_the_guarded_functions_are_the_contracts() -> None:
    assert sorted(live_signatures.RUNTIME_FUNCTIONS) == sorted(CONTRACT_FUNCTIONS)


def test_adoption_every_revision_up_and_down_and_back_keep_the_runtimes_signatures(
    database_url: str,
) -> None:
    schema = new_schema_name("sig")
    DUROXIDE_0_2_2.create_schema(database_url, schema)
    released = signatures(database_url, schema)
    assert sorted(released) == sorted(CONTRACT_FUNCTIONS)
    seen: list[str] = []
    path = [*REVISIONS, *reversed(REVISIONS[:-1]), "base"]
    for revision in path:
        if revision == "base" or REVISIONS.index(revision) < len(seen) - 1:
            migrate.downgrade(database_url, schema, revision)
        else:
            migrate.upgrade(database_url, schema, revision)
        seen.append(revision)
        assert live_signatures.changes(released, signatures(database_url, schema)) == [], revision
    # At base the adopted schema has duroxide's own procedures back, signatures and all.
    assert signatures(database_url, schema) == released


def test_head_has_the_runtimes_signatures(database_url: str) -> None:
    released_schema, head_schema = new_schema_name("sig"), new_schema_name("sig")
    DUROXIDE_0_2_2.create_schema(database_url, released_schema)
    with psycopg.connect(database_url) as conn:
        apply_head(conn, head_schema)
    head = signatures(database_url, head_schema)
    assert sorted(head) == sorted(CONTRACT_FUNCTIONS)
    released = signatures(database_url, released_schema)
    # Head is a new hub's form: the turn as json (revision 0017), the rest as 0.2.2.
    ((args, result),) = released["fetch_orchestration_item"]
    assert head["fetch_orchestration_item"] == ((args, turn_as_json(result)),)
    changed = live_signatures.changes(released, head)
    assert len(changed) == 1 and changed[0].startswith("fetch_orchestration_item:")


def test_a_changed_result_type_is_caught(database_url: str) -> None:
    """The comparison the walk above relies on, against the change that wedges a runtime."""
    # A hub made before 0017: its fetch is still jsonb, as a runtime has it.
    schema = TASKHUB_JSONB.create_schema(database_url, new_schema_name("sig"))
    before = signatures(database_url, schema)
    with psycopg.connect(database_url) as conn:
        conn.execute(JSON_HISTORY.format(schema=f'"{schema}"'))
    changed = live_signatures.changes(before, signatures(database_url, schema))
    assert len(changed) == 1 and changed[0].startswith("fetch_orchestration_item:")
    assert "out_history json," in changed[0] and "out_history jsonb," in changed[0]


def test_a_revision_that_changes_a_result_type_is_refused(
    database_url: str, tmp_path: Path
) -> None:
    schema = new_schema_name("sig")
    migrate.upgrade(database_url, schema)
    before = signatures(database_url, schema)
    location = migrations_with_revision(tmp_path, JSON_HISTORY.format(schema=f'"{schema}"'))
    with pytest.raises(RuntimeSignaturesChanged, match="fetch_orchestration_item"):
        upgrade_with(location, database_url, schema)
    assert signatures(database_url, schema) == before
