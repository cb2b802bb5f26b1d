"""Flow control from the command line and by role: the verbs, their refusals
(exit 2, nothing changed), `status` naming the rules, an operator changing
them under its own login, and a runtime role that cannot."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from devkit.roles import login_role, operator_of
from provider import Client
from provider.cli import main

Cli = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], database_url: str, hub_schema: str) -> Cli:
    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*argv, "--url", database_url, "--schema", hub_schema])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_the_flow_verbs_change_list_and_refuse(cli: Cli) -> None:
    assert cli("limit", "set", "--activity", "Charge", "5", "--reason", "PSP quota") == (
        0,
        "activity Charge: at most 5 running (was no limit)\n",
        "",
    )
    assert cli("limit", "rate", "--activity", "Mail", "20", "--burst", "40")[0] == 0
    assert cli("pause", "--activity", "Sms")[1] == "activity Sms paused\n"
    assert cli("pause", "--activity", "Sms")[1] == "activity Sms was already paused\n"
    code, out, _ = cli("limit", "list", "--json")
    rules = {rule["name"]: rule for rule in json.loads(out)}
    assert code == 0 and set(rules) == {"Charge", "Mail", "Sms"}
    assert (rules["Charge"]["max_running"], rules["Charge"]["reason"]) == (5, "PSP quota")
    assert (rules["Mail"]["per_second"], rules["Mail"]["burst"]) == (20, 40)
    assert rules["Sms"]["paused"] is True

    code, out, _ = cli("status")
    assert code == 0
    assert "  activity Charge: 0 of at most 5 running" in out
    assert "  activity Sms: PAUSED" in out

    # Refused in one line, exit 2, nothing changed.
    for argv in (
        ("limit", "set", "--activity", "Charge", "0"),
        ("limit", "set", "--activity", "", "3"),
        ("limit", "rate", "--activity", "Mail", "0"),
        ("pause", "--activity", "Charge", "--reason", "x" * 3000),
    ):
        code, _, err = cli(*argv)
        assert code == 2, argv
        assert "Traceback" not in err
    code, out, _ = cli("limit", "list", "--json")
    assert {rule["name"]: rule["max_running"] for rule in json.loads(out)}["Charge"] == 5

    assert cli("resume", "--activity", "Sms")[1] == "activity Sms resumed\n"
    assert cli("limit", "remove", "--activity", "Charge")[0] == 0
    assert cli("limit", "remove-rate", "--activity", "Mail")[0] == 0
    assert json.loads(cli("limit", "list", "--json")[1]) == []


def test_label_rules_from_the_command_line(cli: Cli) -> None:
    assert cli("pause", "--label", "tenant=acme", "--reason", "noisy")[1] == (
        "label tenant=acme paused\n"
    )
    assert cli("limit", "set", "--each-label", "tenant", "2") == (
        0,
        "each value of label tenant: at most 2 running (was no limit)\n",
        "",
    )
    assert cli("limit", "rate", "--label", "tenant=globex", "5")[0] == 0
    rules = json.loads(cli("limit", "list", "--json")[1])
    assert {(rule["kind"], rule["name"]) for rule in rules} == {
        ("label", "tenant=acme"),
        ("label", "tenant=globex"),
        ("label_each", "tenant"),
    }
    code, out, _ = cli("status")
    assert code == 0 and "  label tenant=acme: PAUSED" in out
    # One key, of a form the hub takes, or exit 2 and nothing changed.
    for argv in (
        ("pause",),
        ("pause", "--activity", "Charge", "--label", "tenant=acme"),
        ("pause", "--label", "Tenant=acme"),
        ("limit", "set", "--each-label", "tenant=acme", "2"),
    ):
        code, _, err = cli(*argv)
        assert code == 2, argv
        assert "Traceback" not in err
    assert len(json.loads(cli("limit", "list", "--json")[1])) == 3
    assert cli("resume", "--label", "tenant=acme")[1] == "label tenant=acme resumed\n"
    assert cli("limit", "remove", "--each-label", "tenant")[0] == 0
    assert cli("limit", "remove-rate", "--label", "tenant=globex")[0] == 0
    assert json.loads(cli("limit", "list", "--json")[1]) == []


def test_orchestration_rules_from_the_command_line(cli: Cli) -> None:
    assert cli("pause", "--orchestration", "Backfill", "--reason", "db busy")[1] == (
        "orchestration Backfill paused\n"
    )
    assert cli("limit", "set", "--orchestration", "Order", "4") == (
        0,
        "orchestration Order: at most 4 turns at once (was no limit)\n",
        "",
    )
    rules = json.loads(cli("limit", "list", "--json")[1])
    assert {(rule["kind"], rule["name"], rule["paused"]) for rule in rules} == {
        ("orchestration", "Backfill", True),
        ("orchestration", "Order", False),
    }
    code, out, _ = cli("status")
    assert code == 0 and "  orchestration Backfill: PAUSED" in out
    # No rate for turns, one key at a time: exit 2 in one line, nothing changed.
    for argv in (
        ("limit", "rate", "--orchestration", "Order", "5"),
        ("pause", "--orchestration", "Order", "--activity", "Charge"),
    ):
        code, _, err = cli(*argv)
        assert code == 2, argv
        assert "Traceback" not in err
    assert len(json.loads(cli("limit", "list", "--json")[1])) == 2
    assert cli("resume", "--orchestration", "Backfill")[1] == ("orchestration Backfill resumed\n")
    assert cli("limit", "remove", "--orchestration", "Order")[0] == 0
    assert json.loads(cli("limit", "list", "--json")[1]) == []


def test_an_operator_changes_the_rules_under_its_own_login(
    database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with (
        operator_of(database_url, hub_schema) as role,
        Client.connect(role.url, hub_schema) as operator,
    ):
        operator.set_activity_limit("Charge", 2, reason="incident 42")
        operator.pause_activity("Charge")
        assert [rule.name for rule in operator.flow_rules()] == ["Charge"]
        changed_by = sql.execute(
            f'SELECT DISTINCT changed_by FROM "{hub_schema}".taskhub_flow_changes'
        ).fetchall()
        assert changed_by == [(role.name,)]


def test_a_runtime_role_cannot_change_the_rules(
    database_url: str, hub_schema: str, sql: psycopg.Connection[Any]
) -> None:
    with login_role(database_url) as role:
        sql.execute(
            f'SELECT "{hub_schema}".taskhub_grant_runtime_role(%s, %s)', [role.name, "none"]
        )
        try:
            with psycopg.connect(role.url, autocommit=True) as runtime:
                for call in (
                    "taskhub_pause_flow('activity', 'Charge')",
                    "taskhub_set_flow_limit('activity', 'Charge', 1)",
                    "taskhub_set_flow_rate('activity', 'Charge', 1)",
                ):
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        runtime.execute(f'SELECT "{hub_schema}".{call}')
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    runtime.execute(f'DELETE FROM "{hub_schema}".taskhub_flow_rules')
        finally:
            sql.execute(f'SELECT "{hub_schema}".taskhub_revoke_runtime_role(%s)', [role.name])
    assert sql.execute(f'SELECT count(*) FROM "{hub_schema}".taskhub_flow_rules').fetchone() == (0,)
