"""The taskhub-pg pytest plugin: installed with the package, off until a
project turns it on, so that it never adds fixtures to a suite that did not
ask for them.

    # pyproject.toml of a project that tests its activity handlers
    [tool.pytest.ini_options]
    taskhub_pg = true

(or `pytest --taskhub-pg`). Its fixtures are in provider/testing/fixtures.py.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("taskhub_pg", "turn on the taskhub-pg fixtures", type="bool", default=False)
    parser.addoption("--taskhub-pg", action="store_true", help="turn on the taskhub-pg fixtures")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("--taskhub-pg") or config.getini("taskhub_pg"):
        from provider.testing import fixtures

        config.pluginmanager.register(fixtures, "taskhub_pg_fixtures")
