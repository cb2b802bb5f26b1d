"""A released revision never changes: databases that applied it must be able
to trust that replaying it gives the same schema. What is pinned is what the
revision runs (devkit/schema/revision_digest.py): the statements of its
upgrade and downgrade and the tables they lock, however the Python that
renders them is arranged. To change a function, ship a new SQL file in a new
revision. When a revision is released, add its digest here
(`python -m devkit.schema.revision_digest NNNN` prints it)."""

from __future__ import annotations

import pytest

from devkit.schema import revision_digest
from provider.deploy import migration_steps, sql_files

RELEASED = {
    "0028_on_call_search": "aadfcf5771e0ac7afe98c7385d2637d184ebf59ef94d9f047172287b00f175a1",
    "0027_application_client_and_schedules": (
        "a3a0ae418dfef8883e4f47a538bc7b512d84baaf8aaef7e60b2a5520a9f63395"
    ),
    "0026_plans_that_keep_queues_clean": (
        "f5cb1a3e8a47594977ae74d79f83eb3aafb94ebd91cc0bcaa37fb80101022ee6"
    ),
    "0025_poolers_and_failover": "3719cc57d8ad3d0d7aa74abf02bc09c7506b3c4ee4a602d8c1eee838c8629bc3",
    "0024_least_privilege_everywhere": (
        "6bb026d730043c8718447fd58c91544cd328219e772d78456f551027343106ed"
    ),
    "0023_privilege_boundaries": "f61af7aba65e3fe8d3769bd7b6bd957becc1ea3f477a1a3f1dc67f7e461d2c59",
    "0022_one_table_statements": "c10a1f7cf0e5e19a147487e63edc30501972d84cd176a4650b35e39cb43f9e71",
    "0021_queue_upkeep": "1f0264fdbbeac2c586b69ae84621bf2bf74566daf76367be040a0821ff258370",
    "0020_batched_retention": "a2253c8de43fb572ed81dc05d2ceefc29bfe9ae6ff5c404cba271db90a928f5e",
    "0019_trace_contexts": "b9fa1e80287c7ddb7ffdccfe302389ab3505e6bbc2153e8c8d371740aabe9650",
    "0018_lean_acks": "26b46211e4c6bb3b95c25d7c46514f33fec38d911610326864810ec6076f58f9",
    "0017_turn_as_json": "c650bf650f3fa316e4d9fcea12ba211c8c8295a23cdd11e28b0d7a9f79df054c",
    "0016_operator_surface": "8f6e0e50d8e346e567ec0e85ff8df077f8e968d40a48030a496f370bc88916a2",
    "0015_call_gate": "af2930b52425262e3f125bd2be6edacfb360f254539c02899db641c1f376fcde",
    "0014_citus_schema_sharding": (
        "5e3e0d34ca71fd33c7d42d4b15fa212006925c2b130de9c9470d76a0431df2df"
    ),
    "0013_citus_ready_statements": (
        "9f4885e362d32a04d16d3776723bb2a79bd5050bfb7b5b7a8a67dc66063a2703"
    ),
    "0012_deploy_gate": "0b5ef5e16b0340ff719b464cc7f4b4f4ede8c8ed5d6d6dc4c2c99283123b8018",
    "0011_wake_check_in_the_statement": (
        "e001d910b1207a60cd0944db4ef8e613eab2f12ec5baa36d9a34251aae6cc043"
    ),
    "0010_no_jit_on_the_hot_path": (
        "e609223f29f81e65292eab8c2ee61c57f6ee3907e570f2a63f8296183be76323"
    ),
    "0009_push_wakeups": "036138d02f96fbfe95e7df2673f31d1ee0b0d1b2847de17eff0a4b66bc0f6ff4",
    "0008_one_idiom_per_job": "6bb1cdcb84f067ea1e4a72c8dfe70c870db5f2ef97c5be68e904aa56a772099c",
    "0007_fault_tolerance": "65df03a891041e016761dd3a77554d1ed34764f2dd2e93e92ab3fc42ce99e864",
    "0006_hot_path": "668fa91baeca1b48d893009cf7ead4344cb3b4d5a2dbba25df965ca88dccaeff",
    "0005_least_privilege": "84a1dfe636dda257ef0dd2253ba44769583d3390a425de7fa2c6a847827a2448",
    "0004_operations": "0ec0342149c5fd77b72c28b70592244e1dbed1310d3b2a79c868146f66b5c6f9",
    "0003_lease_keeper": "1a8df043ee09a777248ec1de123633b26c47676bd71fbe2dd1b637b900f959a1",
    "0002_full_contract": "e14cdd54c42c8178c03b2b693792144802434417f99f2e7ae8ffc25712560af4",
    "0001_queue_core": "7bb5dc634dcb0c152e07d80bb0bf8b2797cf6a75161a76b279cd9c4743b449ad",
}


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_released_revision_is_unchanged(name: str) -> None:
    assert revision_digest.revision_digest(name[:4]) == RELEASED[name], (
        f"revision {name} was released and must not change; ship a new revision instead"
    )


def test_the_digest_changes_when_a_statement_a_revision_runs_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A step that renders one statement more is a changed release, though
    no revision file or SQL file changed."""
    render = sql_files.render_sql
    monkeypatch.setattr(
        migration_steps, "render_sql", lambda path, schema: render(path, schema) + "\nSELECT 1"
    )
    assert revision_digest.revision_digest("0018") != RELEASED["0018_lean_acks"]
