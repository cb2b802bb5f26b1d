"""A released revision never changes: databases that applied it must be able
to trust that replaying it gives the same schema. To change a function, ship
a new SQL file in a new revision. When a revision is released, add its digest
here."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.paths import REPO

RELEASED = {
    "0018_lean_acks": "f0a0ce5fd03ce4371c9cb3639d098078b509f69bd1929fe3a917afb1a9d38de0",
    "0017_turn_as_json": "9d010dfb2d52c1d3dc8194e99947bcbeec44ff8dcdb33bc553be4da6d73769ac",
    "0016_operator_surface": ("b65f85f06f31780c45a36ae4d512600589240872e9c73ff7ce5ab6ef687de49d"),
    "0015_call_gate": "73a101768a491dc91ac02fb88a8fcc7581e35da04a2ddc4c31a65dbbdd53611f",
    "0014_citus_schema_sharding": (
        "94cbc0528a97b0af1474faadfb1616f3ab2f9d6e399dd7fe162115f543be6457"
    ),
    "0013_citus_ready_statements": (
        "a990bfe7b49a01b64557aa338fddfdcd99e6309d1a14e839262e9445be4b1417"
    ),
    "0012_deploy_gate": "47a3f08c5591c6302a36a11ca5705977a12e97f52bda762ea9ff04031139c889",
    "0011_wake_check_in_the_statement": (
        "7db2516e4a5711efc5d34c2ea6f14bd8145ee69d0b803ce0be9a5712003bae82"
    ),
    "0010_no_jit_on_the_hot_path": (
        "dadc7e0af66265a46082801fdc123b48489243bf46bc06ac1eed8f1f4bb11169"
    ),
    "0009_push_wakeups": "a0a9a6925054c76e2f5985c43291c7b7d92f51c34d0667e7d68c784bd11fc030",
    "0008_one_idiom_per_job": "ded4dd2de1482e39735432dd1838bf3e3a61283cba6413721632fd83425dc436",
    "0007_fault_tolerance": "267f87200eb47ae1ba5302733bde3f4777634bf81a7f1ad9ce73b521b574c2c1",
    "0006_hot_path": "74a5abda5fdac4b99f9d6fbb9acd9277726fddb2ac244db717c8dfcf4cf7fcf9",
    "0005_least_privilege": "7c97a6a95ed6c34051235f41e98ebb43d44b3b2741887a07bf6885b0b3f1a5ca",
    "0004_operations": "b866a078273829e562effb8bac178b0ba3be0f91cf4c0e2da138228355d1ec27",
    "0003_lease_keeper": "81339100619f98a1ad9f82ce520621634af1d21bc110cf4b0f3e46c1326057a9",
    "0002_full_contract": "583087fd3d47fd6aa856e155c8163bc8d00a57f8f52ef439652815b774430caf",
    "0001_queue_core": "149274fa50f9821978cbb913b50502d197e8bf42d2744b3db46484f84dc9066e",
}


def revision_digest(name: str) -> str:
    digest = hashlib.sha256()
    files = sorted((REPO / "sql" / name).glob("*.sql"))
    files.append(REPO / "migrations" / "versions" / f"{name}.py")
    for path in files:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.parametrize("name", sorted(RELEASED))
def test_released_revision_is_unchanged(name: str) -> None:
    assert revision_digest(name) == RELEASED[name], (
        f"revision {name} was released and must not change; ship a new revision instead"
    )
