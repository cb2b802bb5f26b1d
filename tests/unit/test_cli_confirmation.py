"""Destructive verbs ask first (options.confirm): --yes (-y) answers for a
script; without a terminal they refuse with exit 5 (DECLINED) and say how
to run them; at a terminal only a yes goes on (a no, Enter, the default,
and Ctrl-D do not). And prune and delete-instance, their database calls
faked, never delete unconfirmed."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from provider.cli import action_commands
from provider.cli.options import DECLINED, OK, Failure, confirm
from provider.client.operator_plans import OperatorPlans
from provider.client.plans import Plan
from provider.client.steps import operation_of
from provider.config import TaskHubConfig
from provider.types import PrunedBatch
from tests.unit.cli_runs import only_line, run

QUESTION = "Delete instance order-1 and everything it has?"
URL = "postgresql://ops@db.invalid/app"  # never connected to: the calls are faked


class Stdin(io.StringIO):
    """sys.stdin: a terminal (or not) where the user types `typed`."""

    def __init__(self, typed: str = "", *, terminal: bool) -> None:
        super().__init__(typed)
        self.terminal = terminal

    def isatty(self) -> bool:
        return self.terminal


def test_yes_answers_without_asking(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", Stdin("n\n", terminal=True))  # a no, were it asked
    confirm(QUESTION, yes=True)
    assert capsys.readouterr().out == ""


def test_without_a_terminal_it_refuses_saying_how_to_run_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sys.stdin", Stdin("y\n", terminal=False))  # typed, yet no terminal
    with pytest.raises(Failure) as refused:
        confirm(QUESTION, yes=False)
    assert refused.value.code == DECLINED == 5
    assert (
        refused.value.message == f"{QUESTION} Not confirmed: pass --yes to run it without asking."
    )


ANSWERS = {"y": True, "yes": True, "n": False, "": False}  # "": Enter, the default


@pytest.mark.parametrize(("typed", "goes_on"), ANSWERS.items(), ids=repr)
def test_at_a_terminal_only_a_yes_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], typed: str, goes_on: bool
) -> None:
    monkeypatch.setattr("sys.stdin", Stdin(f"{typed}\n" * 3, terminal=True))
    if goes_on:
        confirm(QUESTION, yes=False)
    else:
        with pytest.raises(Failure) as refused:
            confirm(QUESTION, yes=False)
        assert (refused.value.code, refused.value.message) == (
            DECLINED,
            "not confirmed: nothing changed",
        )
    assert QUESTION in capsys.readouterr().out  # it was asked


def test_ctrl_d_at_the_question_is_a_no(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", Stdin("", terminal=True))  # end of input at once
    with pytest.raises(Failure) as refused:
        confirm(QUESTION, yes=False)
    assert refused.value.code == DECLINED


@dataclass
class FakeOperatorHub:
    """What prune and delete-instance call, in place of the database: the
    runbook's plans on the verb's session, and TaskHub.connect(...) with its
    deletes."""

    candidates: int = 2
    deletes: list[tuple[str, Any]] = field(default_factory=list)
    plans: OperatorPlans = field(
        default_factory=lambda: OperatorPlans(TaskHubConfig(url=URL, schema="public"))
    )

    @contextmanager
    def hub_session(self, url: str, schema: str) -> Iterator[FakeOperatorHub]:
        yield self

    def run(self, plan: Plan[Any]) -> Any:
        """The plans' answers, by the plan's name: none of them runs."""
        answers = {"count_prune_candidates": self.candidates, "instance_exists": True}
        plan.close()
        return answers[operation_of(plan) or ""]

    def connect(self, url: str, schema: str, **settings: Any) -> FakeOperatorHub:
        return self

    def __enter__(self) -> FakeOperatorHub:
        return self

    def __exit__(self, *exc_info: object) -> None:
        pass

    def prune_ended(self, completed_before_ms: int, *, batch_size: int) -> PrunedBatch:
        """One batch: what is left of the candidates, at most batch_size."""
        deleted = min(self.candidates, batch_size)
        self.candidates -= deleted
        if deleted:
            self.deletes.append(("prune", batch_size))
        return PrunedBatch(roots_deleted=deleted, instances_deleted=deleted)

    def dispatch_lag_ms(self) -> int:
        return 0  # an idle hub: the prune never waits

    def delete_instance(self, instance_id: str, *, force: bool) -> SimpleNamespace:
        self.deletes.append((instance_id, force))
        return SimpleNamespace(instances_deleted=1)


@pytest.fixture
def operator_hub(monkeypatch: pytest.MonkeyPatch) -> FakeOperatorHub:
    fake = FakeOperatorHub()
    monkeypatch.setattr(action_commands, "hub_session", fake.hub_session)
    monkeypatch.setattr(action_commands, "TaskHub", fake)
    monkeypatch.setattr("sys.stdin", Stdin(terminal=False))
    return fake


DESTRUCTIVE = {
    "prune": (("prune", "--completed-before", "30d"), "Delete 2 ended instances"),
    "delete-instance": (("delete-instance", "order-1"), "Delete instance order-1"),
}


@pytest.mark.parametrize(("verb", "question"), DESTRUCTIVE.values(), ids=DESTRUCTIVE.keys())
def test_a_destructive_verb_without_yes_and_without_a_terminal_deletes_nothing(
    capsys: pytest.CaptureFixture[str],
    operator_hub: FakeOperatorHub,
    verb: tuple[str, ...],
    question: str,
) -> None:
    ran = run(capsys, *verb, "--url", URL)
    assert ran.code == DECLINED
    line = only_line(ran)
    assert question in line and "pass --yes" in line
    assert operator_hub.deletes == []


CONFIRMED = {
    "prune --yes": ("prune", "--completed-before", "30d", "--yes"),
    "delete-instance -y": ("delete-instance", "order-1", "-y"),
}


@pytest.mark.parametrize("verb", CONFIRMED.values(), ids=CONFIRMED.keys())
def test_a_destructive_verb_with_yes_deletes_and_says_what(
    capsys: pytest.CaptureFixture[str], operator_hub: FakeOperatorHub, verb: tuple[str, ...]
) -> None:
    ran = run(capsys, *verb, "--url", URL, "--json")
    assert ran.code == OK
    assert len(operator_hub.deletes) == 1
    assert json.loads(ran.out)["instances_deleted"] >= 1
    # A prune says how far it got after each batch: JSON objects on stderr.
    progress = [json.loads(line) for line in ran.err.splitlines()]
    assert [line["batch"] for line in progress] == ([1] if verb[0] == "prune" else [])


def test_prune_with_nothing_to_delete_does_not_ask(
    capsys: pytest.CaptureFixture[str], operator_hub: FakeOperatorHub
) -> None:
    operator_hub.candidates = 0
    ran = run(capsys, "prune", "--completed-before", "30d", "--url", URL)
    assert (ran.code, ran.err) == (OK, "")
    assert ran.out.strip() == "instances deleted 0" and operator_hub.deletes == []
