"""The settings and error reference pages are written from the code, and
refuse to be written when the code says less than they need. No database."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from devkit.docs import errors_page, settings_page
from provider.cli import dashboard_command, options
from provider.config import TaskHubConfig


def test_every_provider_setting_and_exit_code_is_on_its_page() -> None:
    page = settings_page.settings_page()
    for field in dataclasses.fields(TaskHubConfig):
        assert f"| `{field.name}` |" in page
    codes = errors_page.errors_page()
    for name in ("OK", "PROBLEMS", "USAGE", "NOT_FOUND", "UNREACHABLE", "DECLINED", "INTERRUPTED"):
        assert f"| {getattr(options, name)} | `{name}` |" in codes
    assert "SHORT_WIDTH" not in codes  # a constant of options.py that is no exit code


def test_every_variable_the_dashboard_reads_is_on_the_settings_page() -> None:
    page = settings_page.settings_page()
    for name in (
        dashboard_command.USERS_VARIABLE,
        dashboard_command.USERS_FILE_VARIABLE,
        dashboard_command.SECRET_VARIABLE,
        dashboard_command.SECRET_FILE_VARIABLE,
    ):
        assert f"`{name}`" in page, name


def test_a_setting_without_a_comment_fails_the_page() -> None:
    @dataclasses.dataclass
    class Undocumented:
        described: int = 1  # says what it is
        silent: int = 2

    with pytest.raises(ValueError, match="silent"):
        settings_page.field_comments(Undocumented)


def test_a_sqlstate_the_page_does_not_explain_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = tmp_path / "head"
    (head / "area").mkdir(parents=True)
    (head / "area" / "f.sql").write_text("RAISE EXCEPTION 'x' USING ERRCODE = '22P99';\n")
    monkeypatch.setattr(errors_page, "HEAD", head)
    with pytest.raises(ValueError, match="22P99"):
        errors_page.errors_page()
