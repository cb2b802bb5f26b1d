"""The dashboard in a real browser: Debian's headless Chromium, driven by
Selenium through Debian's chromium-driver (no browser download; .ci/run
installs both). Signed in with HTTP basic auth, it follows links from the
overview to an instance, checks what each page shows against the database,
takes an action through its confirmation, and sees the overview refresh
itself; a page of another origin that frames the dashboard gets nothing.
Under a sub-path it searches, follows a preset to a failed instance's whole
error, and lays out every page at 400 px without sideways scrolling.

Screenshots of each page go to TASKHUB_SCREENSHOTS when it is set (how
docs/dashboard/ was made), else to the test's own folder."""

from __future__ import annotations

import base64
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psycopg
import pytest
import uvicorn
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from devkit.waiting import wait_until
from provider import Client, TaskHub
from provider.client.on_connection import OnConnection
from provider.client.schedule_ticks import Ticks
from provider.dashboard.access import AccessPolicy
from provider.dashboard.app import dashboard_app
from provider.dashboard.passwords import hash_line, read_accounts
from provider.testing.embedded_pg import free_port
from tests.support.failed_instance import failed_order

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


OPERATOR, PASSWORD = "alice", "alice's password"


@pytest.fixture(scope="module")
def users() -> AccessPolicy:
    """The dashboard's sign-in: one operator, by HTTP basic auth."""
    return AccessPolicy(
        accounts=read_accounts(hash_line(OPERATOR, "operator", PASSWORD), "the test's users")
    )


@pytest.fixture
def signed_in(browser: WebDriver) -> Iterator[WebDriver]:
    """The browser sending the operator's credentials with every request
    (what it does once a person has typed them into its sign-in prompt)."""
    encoded = base64.b64encode(f"{OPERATOR}:{PASSWORD}".encode()).decode()
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd(
        "Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {encoded}"}}
    )
    try:
        yield browser
    finally:
        browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})


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
    signed_in: WebDriver,
    users: AccessPolicy,
    database_url: str,
    live_hub: str,
    sql: psycopg.Connection[Any],
    screenshots: Path,
) -> None:
    browser = signed_in
    q = f'"{live_hub}"'
    with Served(dashboard_app(database_url, live_hub, refresh_s=1, access=users)) as served:
        browser.get(served.base + "/")
        assert text_of(browser, "#user") == OPERATOR
        dead = count(sql, f"SELECT count(*) FROM {q}.dead_letters")
        assert text_of(browser, '[data-field="dead_letters"]') == str(dead)
        ready = count(
            sql, f"SELECT ready FROM {q}.taskhub_queue_health WHERE queue = 'orchestrator'"
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
        # The runtime's instances, ours, and one known only by its queued message.
        assert {"checkout-1", "refund-1", "approval-1", "quiet", "leased-instance", "hot"} <= listed
        browser.save_screenshot(str(screenshots / "instances.png"))

        browser.find_element(By.LINK_TEXT, "checkout-1").click()
        wait_until(lambda: browser.current_url.endswith("/instances/checkout-1"), timeout_s=10)
        events = count(sql, f"SELECT count(*) FROM {q}.history WHERE instance_id = 'checkout-1'")
        rows = browser.find_elements(By.CSS_SELECTOR, "tr[data-event]")
        assert len(rows) == events > 0
        timeline = " ".join(str(row.text) for row in rows)
        assert "Reserve" in timeline and "Charge" in timeline and "TimerFired" in timeline
        assert text_of(browser, "#status") == "Completed"
        browser.save_screenshot(str(screenshots / "instance.png"))

        browser.get(served.base + "/instances/refund-1")
        assert text_of(browser, "#status") == "Failed"
        assert "was closed" in str(browser.find_element(By.TAG_NAME, "main").text)

        browser.find_element(By.LINK_TEXT, "Dead letters").click()
        wait_until(lambda: browser.current_url.endswith("/dead-letters"), timeout_s=10)
        assert len(browser.find_elements(By.CSS_SELECTOR, "tr[data-dead-letter]")) == dead
        browser.save_screenshot(str(screenshots / "dead-letters.png"))


def rows_listed(browser: WebDriver) -> set[str]:
    return {
        str(row.get_attribute("data-instance"))
        for row in browser.find_elements(By.CSS_SELECTOR, "tr[data-instance]")
    }


def page_overflow_px(browser: WebDriver) -> int:
    """How far the page is wider than the screen (0: nothing scrolls sideways
    but the tables' own boxes)."""
    return int(
        browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth;")
    )


def test_under_a_sub_path_search_a_preset_and_a_failure_then_every_page_at_400_px(
    signed_in: WebDriver,
    users: AccessPolicy,
    database_url: str,
    live_hub: str,
    sql: psycopg.Connection[Any],
    screenshots: Path,
) -> None:
    browser = signed_in
    q = f'"{live_hub}"'
    app = dashboard_app(database_url, live_hub, access=users, root_path="/taskhub")
    with Served(app) as served:
        root = served.base + "/taskhub"
        browser.get(root + "/instances")
        box = browser.find_element(By.CSS_SELECTOR, 'input[name="id"]')
        box.send_keys("refund")
        box.submit()
        wait_until(lambda: "id=refund" in browser.current_url, timeout_s=10)
        expected = {
            row[0]
            for row in sql.execute(
                f"SELECT instance_id FROM {q}.instances WHERE instance_id LIKE 'refund%'"
            ).fetchall()
        }
        assert rows_listed(browser) == expected == {"refund-1"}
        browser.save_screenshot(str(screenshots / "search.png"))

        browser.find_element(By.LINK_TEXT, "24h").click()
        wait_until(lambda: "started_after=24h" in browser.current_url, timeout_s=10)
        assert "/taskhub/instances?" in browser.current_url and "id=refund" in browser.current_url
        assert rows_listed(browser) == {"refund-1"}

        browser.find_element(By.LINK_TEXT, "refund-1").click()
        wait_until(lambda: browser.current_url.endswith("/taskhub/instances/refund-1"), 10)
        reader = OnConnection(sql, live_hub)
        failure = reader.run(reader.plans.read_failure("refund-1"))
        assert failure is not None and failure.error and "was closed" in failure.error
        shown = browser.find_element(By.CSS_SELECTOR, "#failure pre.error")
        assert str(shown.text).strip() == failure.error.strip()  # whole, not cut
        section = browser.find_element(By.ID, "failure")
        browser.execute_script("arguments[0].scrollIntoView();", section)

        browser.find_element(By.LINK_TEXT, "Overview").click()
        wait_until(lambda: browser.current_url.rstrip("/").endswith("/taskhub"), timeout_s=10)
        failed = browser.find_element(By.CSS_SELECTOR, '[data-status="Failed"]')
        failed.click()
        wait_until(lambda: "status=Failed" in browser.current_url, timeout_s=10)
        assert "refund-1" in rows_listed(browser)

        browser.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": 400, "height": 860, "deviceScaleFactor": 1, "mobile": True},
        )
        try:
            for path, shot in (
                ("/", "narrow-overview.png"),
                ("/instances", "narrow-instances.png"),
                ("/instances/refund-1", "narrow-instance.png"),
                ("/dead-letters", None),
                ("/schedules", None),
                ("/flow", None),
                ("/lists/leases", None),
            ):
                browser.get(root + path)
                # The emulated width reaches a page's layout a moment after its
                # load on a loaded machine (once 413 px, beside a CPU hog); a page
                # wider than 400 px keeps it wider, and fails here.
                wait_until(
                    lambda: browser.execute_script("return window.innerWidth;") == 400,
                    timeout_s=5,
                    message=f"{path} laid out 400 px wide",
                )
                assert page_overflow_px(browser) <= 0, path
                if shot:
                    browser.save_screenshot(str(screenshots / shot))
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


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


def act(browser: WebDriver, page: str, action: str) -> str:
    """Take `action` from its form on `page`, through its question: the outcome."""
    browser.get(page)
    browser.find_element(By.CSS_SELECTOR, f'form[data-action="{action}"] button').click()
    wait_until(lambda: browser.find_elements(By.ID, "question"), timeout_s=10)
    browser.find_element(By.CSS_SELECTOR, "#confirm button").click()
    wait_until(lambda: browser.find_elements(By.ID, "outcome"), timeout_s=10)
    return text_of(browser, "#outcome")


def test_each_action_is_taken_through_its_question_and_refused_without_the_token(
    signed_in: WebDriver,
    users: AccessPolicy,
    database_url: str,
    live_hub: str,
    sql: psycopg.Connection[Any],
) -> None:
    browser = signed_in
    q = f'"{live_hub}"'
    letters = f"SELECT count(*) FROM {q}.dead_letters"
    with Served(dashboard_app(database_url, live_hub, access=users)) as read_only:
        browser.get(read_only.base + "/dead-letters")
        assert not browser.find_elements(By.CSS_SELECTOR, "form.action")
        assert (
            post_from_the_page(browser, "/actions/requeue", "dead_letter_id=1&confirmed=yes") == 403
        )
    assert count(sql, letters) == 1

    with Served(dashboard_app(database_url, live_hub, allow_actions=True, access=users)) as served:
        base = served.base
        browser.get(base + "/dead-letters")
        assert (
            post_from_the_page(browser, "/actions/requeue", "dead_letter_id=1&confirmed=yes") == 403
        )
        assert count(sql, letters) == 1
        # Asked, not done: the question alone changes nothing.
        browser.find_element(By.CSS_SELECTOR, 'form[data-action="requeue"] button').click()
        wait_until(lambda: browser.find_elements(By.ID, "question"), timeout_s=10)
        assert count(sql, letters) == 1

        assert "is back on its queue" in act(browser, base + "/dead-letters", "requeue")
        assert count(sql, letters) == 0

        leased = f"SELECT count(*) FROM {q}.instance_locks WHERE instance_id = 'leased-instance'"
        assert count(sql, leased) == 1
        act(browser, base + "/instances/leased-instance", "release-lease")
        assert count(sql, leased) == 0

        act(browser, base + "/instances/approval-1", "cancel")
        cancels = count(
            sql,
            f"SELECT count(*) FROM {q}.orchestrator_queue"
            " WHERE instance_id = 'approval-1' AND work_item LIKE '%CancelInstance%'",
        )
        assert cancels == 1

        instance = f"SELECT count(*) FROM {q}.instances WHERE instance_id = 'checkout-2'"
        act(browser, base + "/instances/checkout-2", "delete")
        assert count(sql, instance) == 0

        ended = (
            f"SELECT count(*) FROM {q}.instances AS i JOIN {q}.executions AS e"
            " ON e.instance_id = i.instance_id AND e.execution_id = i.current_execution_id"
            " WHERE e.status IN ('Completed', 'Failed')"
        )
        assert count(sql, ended) > 0
        browser.get(base + "/")
        field = browser.find_element(By.CSS_SELECTOR, 'input[name="older_than_days"]')
        field.clear()
        field.send_keys("0")
        browser.find_element(By.CSS_SELECTOR, 'form[data-action="prune"] button').click()
        wait_until(lambda: browser.find_elements(By.ID, "question"), timeout_s=10)
        browser.find_element(By.CSS_SELECTOR, "#confirm button").click()
        wait_until(lambda: browser.find_elements(By.ID, "outcome"), timeout_s=10)
        assert "pruned" in text_of(browser, "#outcome")
        assert count(sql, ended) == 0


class FramingPage:
    """A page of another origin (another port of the same host) that frames
    the dashboard, as the issue's attacker did: served until the block ends."""

    def __init__(self, framed: str) -> None:
        page = (
            "<!doctype html><title>elsewhere</title>"
            f'<iframe id="victim" src="{framed}" width="1000" height="700"'
            " onload=\"document.body.dataset.framed = 'loaded'\"></iframe>"
        ).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __enter__(self) -> FramingPage:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


def test_a_page_of_another_origin_that_frames_the_dashboard_gets_nothing_to_click(
    browser: WebDriver, database_url: str, live_hub: str, sql: psycopg.Connection[Any]
) -> None:
    """The issue's attack: a page on another port framed the dashboard and
    deleted an instance in two clicks. With X-Frame-Options and CSP
    frame-ancestors the browser renders no dashboard in the frame. (No
    sign-in here: the dashboard on loopback asks nobody, so only the headers
    stand in the way.)"""
    q = f'"{live_hub}"'
    instance = f"SELECT count(*) FROM {q}.instances WHERE instance_id = 'checkout-2'"
    with (
        Served(dashboard_app(database_url, live_hub, allow_actions=True)) as served,
        FramingPage(served.base + "/instances/checkout-2") as framing,
    ):
        browser.get(served.base + "/instances/checkout-2")  # the dashboard itself renders
        assert browser.find_elements(By.CSS_SELECTOR, 'form[data-action="delete"] button')
        browser.get(framing.url)
        wait_until(
            lambda: browser.find_element(By.TAG_NAME, "body").get_attribute("data-framed"),
            timeout_s=10,
            message="the frame to load (or to be refused)",
        )
        browser.switch_to.frame(browser.find_element(By.ID, "victim"))
        try:
            rendered = browser.find_elements(By.CSS_SELECTOR, "header, main, form, button")
            if rendered:  # what the attacker wanted: click through to the deletion
                browser.find_element(By.CSS_SELECTOR, 'form[data-action="delete"] button').click()
                wait_until(lambda: browser.find_elements(By.ID, "question"), timeout_s=10)
                browser.find_element(By.CSS_SELECTOR, "#confirm button").click()
                wait_until(lambda: browser.find_elements(By.ID, "outcome"), timeout_s=10)
        finally:
            browser.switch_to.default_content()
    assert count(sql, instance) == 1, "the framed dashboard deleted checkout-2"
    assert not rendered, "the dashboard rendered inside another origin's frame"


def machine_paths() -> list[str]:
    """Where this machine keeps the code and its interpreter: none may show
    in a screenshot the docs commit."""
    return [str(Path(__file__).resolve().parents[2]), sys.prefix, str(Path.home())]


def test_the_docs_screenshots_of_a_failed_instance_with_restart_and_of_the_schedules(
    signed_in: WebDriver,
    users: AccessPolicy,
    database_url: str,
    hub: TaskHub,
    hub_schema: str,
    screenshots: Path,
) -> None:
    """Issue 58: the committed failed-instance shot showed a traceback with
    the absolute path of the machine that made it, and offered Cancel on an
    ended instance. Here: an order failed as the runtime leaves one, its page
    with Restart (an operator's), and the schedules page; neither shows a
    path of this machine."""
    browser = signed_in
    failed_order(hub, "order-1187")
    made = datetime.now(UTC) - timedelta(minutes=3)
    with Client.connect(database_url, hub_schema) as client:
        client.set_schedule("nightly-report", "Report", {"kind": "daily"}, cron="0 2 * * *",
                            priority=3, labels={"team": "finance"})  # fmt: skip
        client.set_schedule("heartbeat", "Ping", every_s=60, now=made)
        tick = Ticks(60, None).latest_at_or_before(made + timedelta(minutes=2))
        assert client.fire_schedule_outcome("heartbeat", tick, True).taken
        client.set_schedule("legacy-sync", "Sync", every_s=3600)
        client.pause_schedule("legacy-sync")
    app = dashboard_app(database_url, hub_schema, allow_actions=True, access=users)
    with Served(app) as served:
        browser.get(served.base + "/instances/order-1187")
        assert text_of(browser, "#status") == "Failed"
        assert browser.find_elements(By.CSS_SELECTOR, 'form[data-action="restart"]')
        assert not browser.find_elements(By.CSS_SELECTOR, 'form[data-action="cancel"]')
        page = str(browser.find_element(By.TAG_NAME, "body").text)
        assert [path for path in machine_paths() if path in page] == []
        browser.save_screenshot(str(screenshots / "failed-instance.png"))

        browser.get(served.base + "/schedules")
        page = str(browser.find_element(By.TAG_NAME, "body").text)
        assert "none yet" in page and "paused" in page
        assert browser.find_elements(By.CSS_SELECTOR, 'form[data-action="schedule-resume"]')
        assert [path for path in machine_paths() if path in page] == []
        browser.save_screenshot(str(screenshots / "schedules.png"))
