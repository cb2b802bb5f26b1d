"""What a side looks like after the run: every orchestration's end, the
histories, the queues and the dead letters."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg

from drills.chaos.client import HarnessClient
from drills.chaos.workload import expected_output

MESSAGE_CHARS = 160


@dataclass
class SideOutcome:
    flavour: str
    schema: str
    orchestrations: int = 0
    completed: int = 0  # Completed with the expected output
    failed: int = 0
    wrong_output: int = 0  # Completed, but not with the expected output
    unfinished: int = 0
    history_gaps: int = 0  # executions whose event ids are not 1..n
    orchestrator_queue_rows: int = 0
    worker_queue_rows: int = 0
    dead_letters: int | None = None  # None: the schema has no dead_letters table
    # Failure acks the schema gave back for redelivery (revision 0007's
    # shielded_failures); informative, not a problem. None: no such table.
    shielded_failures: int | None = None
    failure_messages: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        found = [
            f"{count} {what}"
            for count, what in (
                (self.failed, "orchestrations failed"),
                (self.wrong_output, "orchestrations completed with a wrong output"),
                (self.unfinished, "orchestrations never finished"),
                (self.history_gaps, "executions with gaps in their history"),
                (self.orchestrator_queue_rows, "rows left in orchestrator_queue"),
                (self.worker_queue_rows, "rows left in worker_queue"),
                (self.dead_letters or 0, "rows in dead_letters"),
            )
            if count
        ]
        return found + [f"e.g. {example}" for example in self.examples]


def check_outcome(
    flavour: str,
    schema: str,
    client: HarnessClient,
    conn: psycopg.Connection[Any],
    instances: Mapping[str, int],
) -> SideOutcome:
    outcome = SideOutcome(flavour, schema, orchestrations=len(instances))
    for instance, n in instances.items():
        result = client.status(instance)
        if result.status == "Completed" and result.output == expected_output(n):
            outcome.completed += 1
        elif result.status == "Completed":
            outcome.wrong_output += 1
            _example(outcome, f"{instance} returned {result.output!r}")
        elif result.status == "Failed":
            outcome.failed += 1
            outcome.failure_messages[str(result.error)[:MESSAGE_CHARS]] += 1
        else:
            outcome.unfinished += 1
            _example(outcome, f"{instance} is {result.status}")
    outcome.history_gaps = _count(
        conn,
        f"""SELECT count(*)
              FROM (SELECT 1 FROM "{schema}".history
                     GROUP BY instance_id, execution_id
                    HAVING min(event_id) <> 1 OR max(event_id) <> count(*)) AS gaps""",
    )
    outcome.orchestrator_queue_rows = _count(
        conn, f'SELECT count(*) FROM "{schema}".orchestrator_queue'
    )
    outcome.worker_queue_rows = _count(conn, f'SELECT count(*) FROM "{schema}".worker_queue')
    outcome.dead_letters = _rows_if_table(conn, schema, "dead_letters")
    outcome.shielded_failures = _rows_if_table(conn, schema, "shielded_failures")
    return outcome


def _rows_if_table(conn: psycopg.Connection[Any], schema: str, table: str) -> int | None:
    if not _count(conn, "SELECT count(to_regclass(%s))", [f'"{schema}".{table}']):
        return None
    return _count(conn, f'SELECT count(*) FROM "{schema}".{table}')


def _count(conn: psycopg.Connection[Any], query: str, params: list[Any] | None = None) -> int:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return int(row[0])


def _example(outcome: SideOutcome, text: str) -> None:
    if len(outcome.examples) < 3:
        outcome.examples.append(text)
