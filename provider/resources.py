"""Where the Alembic migrations and the SQL files are.

In the repository they are the top-level `migrations/` and `sql/`; an
installed wheel carries them as `provider/_migrations` and `provider/_sql`,
so a deploy job can migrate from a virtualenv without the repository.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent  # provider/


def _first_existing(installed: Path, in_repository: Path) -> Path:
    return installed if installed.is_dir() else in_repository


def migrations_dir() -> Path:
    return _first_existing(PACKAGE_DIR / "_migrations", PACKAGE_DIR.parent / "migrations")


def sql_dir() -> Path:
    return _first_existing(PACKAGE_DIR / "_sql", PACKAGE_DIR.parent / "sql")
