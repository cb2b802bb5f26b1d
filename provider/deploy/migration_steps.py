"""Apply SQL files from `sql/` inside an Alembic revision."""

from __future__ import annotations

import re
from collections.abc import Sequence

from alembic import context, op
from sqlalchemy import text

from provider.deploy import migration_options, turn_form
from provider.deploy.sql_files import read_sql, render_text
from provider.schema_name import quote_schema

# SQLAlchemy's text() treats ":name" as a bind parameter, even inside a $$ body
# (and offline it would silently render it as NULL). Escape every such colon.
_BIND_LIKE = re.compile(r"(?<![:\w\\]):(\w+)(?![:\w])")


def _schema() -> str:
    return migration_options.stored(context.config).schema


def _execute(sql: str) -> None:
    op.execute(text(_BIND_LIKE.sub(r"\\:\1", sql)))


def execute_sql(sql: str) -> None:
    """One statement, inside a revision, with its colons kept as they are."""
    _execute(sql)


# A file under sql/, or files sent as one statement: a file a released
# revision shipped whole, now kept as the versions of its functions
# (sql/functions/<name>/), whose texts joined are that file's, byte for byte.
Source = str | Sequence[str]


def source_text(source: Source) -> str:
    if isinstance(source, str):
        return read_sql(source)
    return "".join(read_sql(path) for path in source)


def source_key(source: Source) -> str:
    """How a source is named where it is a key (replace_with_released's)."""
    return source if isinstance(source, str) else " + ".join(source)


def apply_sql_files(sources: Sequence[Source]) -> None:
    """Execute each file (or files as one), in order, against the schema this
    run targets."""
    for source in sources:
        _execute(render_text(source_text(source), _schema()))


def _name_array(names: list[str]) -> str:
    for name in names:
        if not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"not a function name: {name!r}")
    return "ARRAY[" + ", ".join(f"'{name}'" for name in names) + "]::text[]"


def set_aside_functions(names: list[str]) -> None:
    """Save and drop existing functions with these names (sql/head/adoption/)."""
    _execute(f"SELECT {quote_schema(_schema())}.taskhub_set_aside_functions({_name_array(names)})")


def drop_and_restore_functions(names: list[str]) -> None:
    """Drop this revision's functions with these names, then re-create those it set aside."""
    drop_functions(names)
    _execute(f"SELECT {quote_schema(_schema())}.taskhub_restore_functions({_name_array(names)})")


def drop_functions(names: list[str]) -> None:
    """Drop every function of the schema with one of these names."""
    schema = quote_schema(_schema())
    _execute(
        f"""DO $drop$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args
          FROM pg_proc AS p
         WHERE p.pronamespace = '{schema}'::regnamespace
           AND p.proname = ANY ({_name_array(names)})
    LOOP
        EXECUTE format('DROP FUNCTION {schema}.%I(%s)', v_fn.proname, v_fn.args);
    END LOOP;
END
$drop$"""
    )


_CREATE_FUNCTION = re.compile(
    r"^CREATE (?:OR REPLACE )?FUNCTION \S+?\.(\w+)\(.*?\$\$;[ \t]*$",
    flags=re.MULTILINE | re.DOTALL,
)


def _released_functions(source: Source, names: list[str] | None) -> str:
    """The CREATE FUNCTION statements of a released file (all, or those named),
    as CREATE OR REPLACE."""
    sql = render_text(source_text(source), _schema())
    if names is not None:
        found = {m.group(1): m.group(0) for m in _CREATE_FUNCTION.finditer(sql)}
        missing = sorted(set(names) - set(found))
        if missing:
            raise ValueError(f"{source_key(source)} defines no function {', '.join(missing)}")
        sql = "\n\n".join(found[name] for name in names)
    return re.sub(r"^CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION ", sql, flags=re.M)


def replace_with_released(
    relative_paths: Sequence[Source], functions: dict[str, list[str]] | None = None
) -> None:
    """Put back the functions of released files in place (CREATE OR REPLACE),
    so that their grants and dependants survive; a downgrade's way back.

    `functions` limits a file to the functions it names. A function that ran
    as its owner (SECURITY DEFINER, which revision 0005 added after the file
    was released) still does afterwards."""
    schema = quote_schema(_schema())
    _execute(
        "CREATE TEMP TABLE taskhub_replaced_definers ON COMMIT DROP AS"
        f" SELECT p.oid FROM pg_proc AS p WHERE p.pronamespace = '{schema}'::regnamespace"
        " AND p.prosecdef"
    )
    for source in relative_paths:
        _execute(_released_functions(source, (functions or {}).get(source_key(source))))
    _execute(
        """DO $definer$
DECLARE
    v_fn record;
BEGIN
    FOR v_fn IN
        SELECT p.oid::regprocedure AS signature
          FROM pg_proc AS p JOIN taskhub_replaced_definers AS d ON d.oid = p.oid
         WHERE NOT p.prosecdef
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', v_fn.signature);
    END LOOP;
END
$definer$"""
    )
    _execute("DROP TABLE taskhub_replaced_definers")


def create_fetch_in_turn_form() -> None:
    """The fetch as json on a hub this run creates, else as jsonb (a runtime
    may have the older result type prepared): provider/deploy/turn_form.py."""
    _execute(turn_form.chooser(_schema()))


def replace_fetch_keeping_its_form(relative_path: str) -> None:
    """A later fetch body, in the form the hub's fetch hands over now."""
    _execute(turn_form.keeping_its_form(_schema(), relative_path))


def drop_fetch_of_form(form: str) -> None:
    """A downgrade's first step when the released fetch is of the other form."""
    _execute(turn_form.back_to(_schema(), form))
