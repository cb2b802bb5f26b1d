"""What every revision of a migration run goes through, wrapped around it by
provider/deploy/runner.py: the call gate and the table locks first, the lock and
signature checks last.

When the gate closes. A call of a gated body (revision 0015 on) must never be
half-way through it when a migration commits: the migration may have dropped
what the body uses. Two moments could leave it so, and the gate closes before
the first of them:

* a table lock the hub's calls take too (HOT_PATH_ORDER): a call would wait
  for it half-way through its body, so the gate closes before the lock;
* the commit itself: a revision that only replaces functions closes the gate
  just before it commits (the wait is then that of a commit, not of the run).

Upgrades commit revision by revision from 0006 on (each is a released
revision the runtime runs on, and adds what the next needs; provider/deploy/runner.py
runs those below it in one transaction), so the hub waits on one revision at a
time; the first revision of a run also locks the tables the later ones
declare, so that a table some session holds for good stops the run before
anything is committed. A downgrade is one transaction: once it has gone below
the gate's revision, the bodies it leaves are not gated, and a later step
could drop what they use.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy.engine import Connection

from provider.deploy import live_signatures, table_locks
from provider.deploy.node_gate import NodeGate
from provider.deploy.refusals import RuntimeSignaturesChanged, UndeclaredTableLocks
from provider.deploy.run_report import MigrationRun
from provider.deploy.version_table import VERSION_TABLE
from provider.schema_name import quote_schema


def runtime_signatures(connection: Connection, schema: str) -> live_signatures.Signatures:
    rows = connection.exec_driver_sql(
        live_signatures.SIGNATURES_QUERY, live_signatures.query_parameters(quote_schema(schema))
    )
    return live_signatures.signatures_from_rows(tuple(row) for row in rows)


class RevisionGuard:
    def __init__(
        self,
        schema: str,
        run: MigrationRun,
        connection: Connection | None,
        execute: Callable[[str], None],
    ) -> None:
        self.schema = schema
        self.run = run
        self.connection = connection  # None: a --sql script
        self.execute = execute  # into the --sql script
        self.gate_closed_at: float | None = None  # in the open transaction
        # What the revisions of the open transaction declared: its locks stay
        # until it commits, a downgrade's over several revisions.
        self.declared_in_transaction: set[str] = set()
        self.revisions_in_transaction = 0
        # What there was when the transaction's first revision began (online):
        # the tables (those it creates itself are its own to lock) and the
        # signatures of the functions the runtime calls.
        self.tables_before: dict[int, str] | None = None
        self.signatures_before: live_signatures.Signatures | None = None
        # Functions whose result type a revision of the transaction declares it
        # changes (CHANGES_RESULT_TYPE_ON_DOWNGRADE): a deliberate, documented
        # switch, which the operator makes with the runtimes stopped.
        self.declared_changes: set[str] = set()
        # Every table the revisions still to run declare. The first of them
        # locks them all: a table that a stuck session holds then stops the run
        # before anything is committed, not half-way.
        self.still_to_lock: list[str] = []
        # Online, on a hub that may be distributed by Citus: the gate on its
        # node too (provider/deploy/node_gate.py).
        self.node_gate: NodeGate | None = None

    def steps_planned(self, steps: list[Any]) -> None:
        self.still_to_lock = table_locks.declared_tables(steps)

    def transaction_started(self) -> None:
        if self.node_gate is not None:
            self.node_gate.open()
        self.gate_closed_at = None
        self.declared_in_transaction = set()
        self.revisions_in_transaction = 0
        self.tables_before = self.signatures_before = None
        self.declared_changes = set()

    # -- the gate ---------------------------------------------------------
    def close_gate(self) -> None:
        """Close the call gate in the open transaction, once."""
        if self.gate_closed_at is not None:
            return
        if self.connection is None:
            self.execute(table_locks.call_gate_statement(self.schema))
        else:
            table_locks.close_call_gate(self.connection, self.schema)
            if self.node_gate is not None:
                self.node_gate.close(self.connection)
        self.gate_closed_at = time.monotonic()

    def transaction_committed(self) -> None:
        """The transaction that held the gate has committed (or is about to)."""
        if self.gate_closed_at is not None:
            held_ms = round((time.monotonic() - self.gate_closed_at) * 1000, 1)
            self.run.locks_held_ms = max(self.run.locks_held_ms or 0.0, held_ms)
        self.transaction_started()

    # -- one revision -----------------------------------------------------
    def guarded(
        self, step: Any, revision_fn: Callable[..., None], per_revision: bool, up_front: bool
    ) -> Any:
        """The revision's function, run inside the guard. per_revision: it
        commits next; up_front: the first revision locks the whole run's tables."""

        @functools.wraps(revision_fn)  # Alembic logs the step by its function's name
        def run_guarded(**kw: Any) -> None:
            declared = table_locks.declared_tables([step])
            if up_front:  # a downgrade is atomic anyway: it locks as it goes
                declared = table_locks.in_lock_order([*declared, *self.still_to_lock])
                self.still_to_lock = []
            self.declared_in_transaction.update(declared)
            if not step.is_upgrade:
                self.declared_changes.update(
                    getattr(step.revision.module, "CHANGES_RESULT_TYPE_ON_DOWNGRADE", [])
                )
            self.revisions_in_transaction += 1
            if self.connection is not None and self.tables_before is None:
                self.tables_before = table_locks.relations_before(self.connection, self.schema)
                self.signatures_before = runtime_signatures(self.connection, self.schema)
            # Tables no call takes half-way through a gated body first, with
            # the gate open: a caller that holds one while it calls through
            # the gate (a scheduler of 0027 holds its schedule's row) finishes,
            # instead of waiting at a closed gate for a run that waits for it.
            # Then the gate, then the hot path's tables.
            hot = [table for table in declared if table in table_locks.HOT_PATH_ORDER]
            self._lock([table for table in declared if table not in hot])
            if hot:
                self.close_gate()
                self._lock(hot)
            revision_fn(**kw)
            if per_revision:
                self.before_commit()  # this revision commits next

        return run_guarded

    def before_commit(self) -> None:
        """What the open transaction's revisions did, checked as a runtime
        would meet it once committed; then the gate closes for the commit."""
        if not self.revisions_in_transaction:
            return
        if self.connection is not None:
            self._refuse_undeclared_locks()
            self._refuse_signature_changes()
        self.close_gate()

    def _lock(self, tables: list[str]) -> None:
        """LOCK the tables that exist, in order (in a --sql script, a block
        that locks those that exist when it runs)."""
        if not tables:
            return
        if self.connection is None:
            self.execute(table_locks.offline_lock_statement(self.schema, tables))
            self._locked(tables)
            return
        present = table_locks.existing_tables(self.connection, self.schema, tables)
        table_locks.lock_tables(self.connection, self.schema, present)
        self._locked(present)

    def _locked(self, tables: list[str]) -> None:
        self.run.locked_tables = table_locks.in_lock_order([*self.run.locked_tables, *tables])

    def _refuse_undeclared_locks(self) -> None:
        """A revision that took a strong lock it did not declare could have
        deadlocked with the hub: refuse it, so that its test fails."""
        assert self.connection is not None and self.tables_before is not None
        allowed = [*self.declared_in_transaction, VERSION_TABLE]
        undeclared = table_locks.undeclared_strong_locks(
            self.connection, self.tables_before, allowed
        )
        if undeclared:
            raise UndeclaredTableLocks(
                f"schema {self.schema}: revisions took strong locks on"
                f" {', '.join(undeclared)} that they do not declare"
                " (locks_on_upgrade / locks_on_downgrade in the revision's"
                " sql/revisions/NNNN_name/revision.toml);"
                " they were rolled back"
            )

    def _refuse_signature_changes(self) -> None:
        """A running runtime has these signatures prepared: a change would wedge it."""
        assert self.connection is not None and self.signatures_before is not None
        after = runtime_signatures(self.connection, self.schema)
        changed = live_signatures.changes(
            self.signatures_before, after, allowed=self.declared_changes
        )
        if changed:
            raise RuntimeSignaturesChanged(
                f"schema {self.schema}: revisions would change functions that running"
                " runtimes have prepared (they would fail every call until restarted):"
                f" {' | '.join(changed)}; they were rolled back"
            )
