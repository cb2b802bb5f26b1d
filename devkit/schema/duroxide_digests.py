"""Write provider/deploy/vouched_duroxide.py: the digests of the functions
the released duroxide 0.2.2 runtime creates, taken from a schema it makes.

    python -m devkit.schema.duroxide_digests URL    # rewrites the module

A digest is the md5 of the text with the schema's qualifier (`<schema>.`)
replaced by `__SCHEMA__.`: duroxide writes the schema into every body, so the
same function in two schemas has one digest. Two kinds: a body
(pg_proc.prosrc, which `taskhub-pg check` compares) and a whole definition
(pg_get_functiondef, what an adoption sets aside and a downgrade to base puts
back). tests/deploy/test_superuser_steps.py checks that a schema made by the
installed duroxide still matches.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

import psycopg

DIGESTS_QUERY = """
SELECT p.proname, l.lanname,
       md5(replace(p.prosrc, quote_ident(%(schema)s) || '.', '__SCHEMA__.')),
       md5(replace(pg_get_functiondef(p.oid), quote_ident(%(schema)s) || '.', '__SCHEMA__.'))
  FROM pg_proc AS p
  JOIN pg_language AS l ON l.oid = p.prolang
 WHERE p.pronamespace = to_regnamespace(%(schema)s)
 ORDER BY 1, 3
"""

MODULE = Path(__file__).resolve().parents[2] / "provider" / "deploy" / "vouched_duroxide.py"


def digests(conn: psycopg.Connection[Any], schema: str) -> tuple[list[str], list[str]]:
    """(body digests as 'name language md5', definition digests as 'md5')."""
    rows = conn.execute(DIGESTS_QUERY, {"schema": schema}).fetchall()
    bodies = sorted({f"{name} {language} {body}" for name, language, body, _ in rows})
    definitions = sorted({str(definition) for _, _, _, definition in rows})
    return bodies, definitions


def duroxide_schema_digests(url: str) -> tuple[list[str], list[str]]:
    """The digests of a schema the installed duroxide makes (then dropped)."""
    import duroxide  # the runtime extra's; never imported by the package

    schema = f"vouch_{secrets.token_hex(4)}"
    duroxide.PostgresProvider.connect_with_schema(url, schema)
    with psycopg.connect(url, autocommit=True) as conn:
        try:
            return digests(conn, schema)
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def render(bodies: list[str], definitions: list[str]) -> str:
    lines = [
        '"""What the released duroxide 0.2.2 runtime creates: the digests of its',
        "functions, which `taskhub-pg check` accepts beside the package's own code",
        "(provider/operations/drift_check.py). Written by",
        "`python -m devkit.schema.duroxide_digests URL`; do not edit by hand.",
        '"""',
        "",
        "# 'name language md5(body)', the schema written as __SCHEMA__.",
        "BODIES = frozenset(",
        "    {",
        *(f'        "{entry}",' for entry in bodies),
        "    }",
        ")",
        "",
        "# md5(pg_get_functiondef(...)), the schema written as __SCHEMA__.",
        "DEFINITIONS = frozenset(",
        "    {",
        *(f'        "{entry}",' for entry in definitions),
        "    }",
        ")",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m devkit.schema.duroxide_digests URL", file=sys.stderr)
        return 2
    MODULE.write_text(render(*duroxide_schema_digests(argv[0])), encoding="utf-8")
    print(f"wrote {MODULE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
