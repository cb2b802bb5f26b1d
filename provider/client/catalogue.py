"""What the catalogue says of the hub's functions: whether a hub has one (a
part a later revision added), and which of them the connected role may
execute. Asked first instead of trying a call, so that a plan never fails a
statement inside a transaction its caller holds."""

from __future__ import annotations

from psycopg import sql

from provider.client.plans import Plan, Plans
from provider.client.reads import Column, Read, Where
from provider.schema_name import quote_schema

_TO_REGNAMESPACE = sql.SQL("pg_catalog.to_regnamespace({})")
_TO_REGPROCEDURE = sql.SQL("pg_catalog.to_regprocedure({})")


class Catalogue(Plans):
    def has_function(self, signature: str) -> Plan[bool]:
        """Whether the hub has the function `signature`, as
        "taskhub_trace_context(text)" (its arguments' types)."""
        qualified = f"{quote_schema(self.config.schema)}.{signature}"
        rows = yield from self._read(
            Read(
                "pg_proc",
                (Column("proname"),),
                where=(Where("oid", "=", qualified, around=_TO_REGPROCEDURE),),
                catalogue=True,
            )
        )
        return bool(rows)

    def executable(self, functions: list[str]) -> Plan[set[str]]:
        """Which of the hub's functions the connected role may execute (every
        overload of a name counts: one is enough for the operator's calls)."""
        rows = yield from self._read(
            Read(
                "pg_proc",
                (Column("proname"),),
                where=(
                    Where(
                        "pronamespace",
                        "=",
                        quote_schema(self.config.schema),
                        around=_TO_REGNAMESPACE,
                    ),
                    Where("proname", "= ANY", functions),
                    Where(sql.SQL("has_function_privilege(oid, 'EXECUTE')"), "=", True),
                ),
                catalogue=True,
            )
        )
        return {str(row["proname"]) for row in rows}
