"""The dashboard in a real browser: Debian's headless Chromium, driven by
Selenium through Debian's chromium-driver (no browser download; .ci/run
installs both). It follows links from the overview to an instance, checks
what each page shows against the database, takes an action through its
confirmation, and sees the overview refresh itself.

Screenshots of each page go to TASKHUB_SCREENSHOTS when it is set (how
docs/dashboard/ was made), else to the test's own folder."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from provider.dashboard.app import dashboard_app
from provider.testing.embedded_pg import free_port
from tests.support.waiting import wait_until

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = [
    pytest.mark.skipif(
        not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
        reason="needs Debian's chromium and chromium-driver (.ci/run installs them)",
    ),
    # Chromium's CPU would starve the parallel part's deploy drill (its waits
    # passed the runtime's 1 s slow-statement warning in one run).
    pytest.mark.alone,
]


class Served:
    """The dashboard app under uvicorn in a thread, on a free port."""

    def __init__(self, app: Any) -> None:
        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Served:
        self.thread.start()
        wait_until(lambda: self.server.started, timeout_s=20, message="the dashboard to serve")
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("TASKHUB_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def text_of(browser: WebDriver, css: str) -> str:
    return str(browser.find_element(By.CSS_SELECTOR, css).text).strip()


def count(sql: psycopg.Connection[Any], query: str) -> int:
    row = sql.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def test_from_the_overview_to_an_instance_each_page_shows_the_database(
    browser: WebDriver,
    database_url: str,
    busy_hub: str,
    sql: psycopg.Connection[Any],
    screenshots: Path,
) -> None:
    with Served(dashboard_app(database_url, busy_hub, refresh_s=1)) as served:
        browser.get(served.base + "/")
        dead = count(sql, f'SELECT count(*) FROM "{busy_hub}".dead_letters')
        assert text_of(browser, '[data-field="dead_letters"]') == str(dead)
        ready = count(
            sql,
            f"SELECT ready FROM \"{busy_hub}\".taskhub_queue_health WHERE queue = 'orchestrator'",
        )
        assert text_of(browser, '[data-queue="orchestrator"] [data-field="ready"]') == str(ready)
        # The panel refreshes itself: the script stamps each refresh.
        wait_until(
            lambda: browser.find_element(By.ID, "overview").get_attribute("data-refreshed-at"),
            timeout_s=10,
            message="the overview to refresh itself",
        )
        browser.save_screenshot(str(screenshots / "overview.png"))

        browser.find_element(By.LINK_TEXT, "Instances").click()
        wait_until(lambda: "/instances" in browser.current_url, timeout_s=10)
        listed = {
            row.get_attribute("data-instance")
            for row in browser.find_elements(By.CSS_SELECTOR, "tr[data-instance]")
        }
        assert {"quiet", "leased-instance", "hot"} <= listed
        browser.save_screenshot(str(screenshots / "instances.png"))

        browser.find_element(By.LINK_TEXT, "quiet").click()
        wait_until(lambda: browser.current_url.endswith("/instances/quiet"), timeout_s=10)
        events = count(
            sql, f"SELECT count(*) FROM \"{busy_hub}\".history WHERE instance_id = 'quiet'"
        )
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr[data-event]")) == events > 0
        assert text_of(browser, "#status") == "Running"
        browser.save_screenshot(str(screenshots / "instance.png"))

        browser.find_element(By.LINK_TEXT, "Dead letters").click()
        wait_until(lambda: browser.current_url.endswith("/dead-letters"), timeout_s=10)
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr[data-dead-letter]")) == dead
        browser.save_screenshot(str(screenshots / "dead-letters.png"))


def post_from_the_page(browser: WebDriver, path: str, body: str) -> int:
    """A POST made by script from the page (no form, so no token): its status."""
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {method: 'POST', body: arguments[1],"
        " headers: {'Content-Type': 'application/x-www-form-urlencoded'}})"
        ".then(r => done(r.status)).catch(e => done(String(e)));",
        path,
        body,
    )
    return int(status)


def test_an_action_is_taken_through_its_question_and_refused_without_the_token(
    browser: WebDriver, database_url: str, busy_hub: str, sql: psycopg.Connection[Any]
) -> None:
    letters = f'SELECT count(*) FROM "{busy_hub}".dead_letters'
    with Served(dashboard_app(database_url, busy_hub)) as read_only:
        browser.get(read_only.base + "/dead-letters")
        assert not browser.find_elements(By.CSS_SELECTOR, "form.action")
        assert (
            post_from_the_page(browser, "/actions/requeue", "dead_letter_id=1&confirmed=yes") == 403
        )
    assert count(sql, letters) == 1

    with Served(dashboard_app(database_url, busy_hub, allow_actions=True)) as served:
        browser.get(served.base + "/dead-letters")
        assert (
            post_from_the_page(browser, "/actions/requeue", "dead_letter_id=1&confirmed=yes") == 403
        )
        assert count(sql, letters) == 1
        browser.find_element(By.CSS_SELECTOR, 'form[data-action="requeue"] button').click()
        wait_until(lambda: browser.find_elements(By.ID, "question"), timeout_s=10)
        assert count(sql, letters) == 1  # asked, not done
        browser.find_element(By.CSS_SELECTOR, "#confirm button").click()
        wait_until(lambda: browser.find_elements(By.ID, "outcome"), timeout_s=10)
        assert "is back on its queue" in text_of(browser, "#outcome")
    assert count(sql, letters) == 0
