"""Run the Alembic migrations from Python (tests, `make run`, deploy scripts)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

from provider.schema_name import validate_schema_name

REPO_ROOT = Path(__file__).resolve().parent.parent


def alembic_config(url: str, schema: str) -> Config:
    config = Config(str(REPO_ROOT / "alembic.ini"))
    config.attributes["url"] = url
    config.attributes["schema"] = validate_schema_name(schema)
    return config


def upgrade(url: str, schema: str = "public", revision: str = "head") -> None:
    command.upgrade(alembic_config(url, schema), revision)


def downgrade(url: str, schema: str = "public", revision: str = "base") -> None:
    command.downgrade(alembic_config(url, schema), revision)
