"""A check written once (provider/deploy/sql_checks.py) is written out where
a file names it, aligned as it would be by hand; the head ack renders to the
very text of its newest released version, so its element checks became one
source each without a new revision or a changed plan."""

from __future__ import annotations

import pytest

from provider.deploy.sql_checks import CHECKS, expand_checks
from provider.deploy.sql_files import function_versions, read_sql, render_text

ACK = "orchestration_queue/ack_orchestration_item.sql"


def test_a_check_is_written_out_aligned_under_its_first_line() -> None:
    text = "    IF x THEN\n    ELSIF __NOT_AN_ACTIVITY_ITEM(v_item)__ THEN\n"
    assert expand_checks(text) == (
        "    IF x THEN\n"
        "    ELSIF jsonb_typeof(v_item) <> 'object'\n"
        "          OR jsonb_typeof(v_item -> 'ActivityExecute') IS DISTINCT FROM 'object'\n"
        "          OR v_item - 'ActivityExecute' <> '{}'::jsonb THEN\n"
    )


def test_an_unknown_check_is_refused() -> None:
    with pytest.raises(ValueError, match="no check named NOT_A_CHECK"):
        expand_checks("WHERE __NOT_A_CHECK(e)__")


def test_the_ack_names_each_element_check_and_renders_as_released() -> None:
    head = read_sql(f"head/{ACK}")
    for name in CHECKS:
        assert f"__{name}(" in head
    for text in ("pg_column_size(e) >", "jsonb_typeof(w -> 'ActivityExecute')"):
        assert text not in head  # written once, in sql_checks.py
    newest = function_versions("ack_orchestration_item")[-1]
    released = read_sql(f"functions/ack_orchestration_item/{newest}.sql")
    body = render_text(head, "hub").split("AS $$", 1)[1].split("$$;", 1)[0]
    assert body in render_text(released, "hub")
