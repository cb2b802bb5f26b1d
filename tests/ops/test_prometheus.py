"""The shipped alerting rules and Grafana dashboard in a real Prometheus
(Debian's, which .ci/run installs): promtool checks the rules and runs their
unit tests (series that fire each rule and series that do not); a
Prometheus scrapes `taskhub-pg metrics` against a live hub, and
TaskHubFailuresRising fires after failures are made and not before; every
panel of docs/examples/grafana-taskhub.json returns data in it. Before issue
58 there was no gauge of failed instances, so no rule could see them."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit.roles import operator_of
from devkit.waiting import wait_until
from provider import Client, TaskHub
from provider.testing.embedded_pg import free_port
from tests.support.failed_instance import failed_order
from tests.support.metrics_server import metrics_server
from tests.support.paths import REPO

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
RULES = REPO / "docs" / "examples" / "taskhub-alerts.yml"
RULE_TESTS = REPO / "tests" / "ops" / "prometheus" / "taskhub-alerts.test.yml"
GRAFANA = REPO / "docs" / "examples" / "grafana-taskhub.json"

pytestmark = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="needs Debian's prometheus and promtool (.ci/run installs them)",
)


def alerts_of_rules() -> list[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule["alert"] for group in groups for rule in group["rules"]]


def test_promtool_checks_the_shipped_rules() -> None:
    checked = subprocess.run(
        [str(PROMTOOL), "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(alerts_of_rules())} rules found" in checked.stdout


def test_every_rule_has_series_that_fire_it_and_series_that_do_not() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired: set[str] = set()
    for case in tests:
        expected = [check for check in case["alert_rule_test"] if check["exp_alerts"]]
        fired |= {check["alertname"] for check in expected}
        # Each case holds more series than the alerts it expects: the
        # others are the series that must not fire.
        firing = max(len(check["exp_alerts"]) for check in case["alert_rule_test"])
        assert len(case["input_series"]) > firing, case
    assert sorted(set(alerts_of_rules()) - fired) == []
    ran = subprocess.run(
        [str(PROMTOOL), "test", "rules", RULE_TESTS.name],
        capture_output=True,
        text=True,
        cwd=RULE_TESTS.parent,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


# -- a real Prometheus against a live hub -------------------------------------


class Prometheus:
    """A Prometheus of this test's own: its HTTP API."""

    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(self.base + path + query, timeout=5) as answer:
            return json.loads(answer.read())

    def query(self, expr: str) -> list[Any]:
        found = self.get("/api/v1/query", query=expr)
        assert found["status"] == "success", found
        return list(found["data"]["result"])

    def rule(self, name: str) -> dict[str, Any]:
        groups = self.get("/api/v1/rules")["data"]["groups"]
        return next(rule for group in groups for rule in group["rules"] if rule["name"] == name)

    def firing(self, name: str, schema: str) -> bool:
        alerts = self.get("/api/v1/alerts")["data"]["alerts"]
        return any(
            alert["labels"].get("alertname") == name
            and alert["labels"].get("schema") == schema
            and alert["state"] == "firing"
            for alert in alerts
        )


def _ready(base: str, process: subprocess.Popen[str]) -> bool:
    if process.poll() is not None:
        pytest.fail(f"prometheus did not start: {process.communicate()[1][-2000:]}")
    try:
        with urllib.request.urlopen(base + "/-/ready", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


@pytest.fixture
def prometheus(tmp_path: Path, metrics_base: str) -> Iterator[Prometheus]:
    """Prometheus scraping `taskhub-pg metrics` every second, evaluating the
    shipped rules every second."""
    target = metrics_base.removeprefix("http://")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "taskhub", "static_configs": [{"targets": [target]}]}],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    process = subprocess.Popen(
        [
            str(PROMETHEUS),
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _ready(base, process), timeout_s=60, interval_s=0.1)
        yield Prometheus(base)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def metrics_base(database_url: str, hub_schema: str) -> Iterator[str]:
    """`taskhub-pg metrics` of the hub, logged in as an operator role, as the
    runbook deploys it."""
    with (
        operator_of(database_url, hub_schema) as role,
        metrics_server(role.url, hub_schema) as (
            base,
            _,
        ),
    ):
        yield base


def samples(prometheus: Prometheus, expr: str) -> int:
    found = prometheus.query(f"count_over_time({expr}[5m])")
    return int(float(found[0]["value"][1])) if found else 0


def test_failures_rising_fires_after_failures_and_not_before(
    prometheus: Prometheus, hub: TaskHub, hub_schema: str, database_url: str
) -> None:
    failed = f'taskhub_instances{{schema="{hub_schema}",status="Failed"}}'
    # A flow rule, so that the dashboard's flow panels have a series too.
    with Client.connect(database_url, hub_schema) as client:
        client.pause_activity("Charge", reason="the panels' test")
    wait_until(lambda: samples(prometheus, failed) >= 3, timeout_s=60, interval_s=0.2)
    # Evaluated on those samples: not firing.
    seen = time.time()

    def evaluated_since(moment: float) -> dict[str, Any] | None:
        rule = prometheus.rule("TaskHubFailuresRising")
        last = rule.get("lastEvaluation", "")
        return rule if last and _epoch(last) > moment else None

    rule = wait_until(lambda: evaluated_since(seen), timeout_s=30, interval_s=0.2)
    assert rule["health"] == "ok" and rule["state"] == "inactive", rule
    assert not prometheus.firing("TaskHubFailuresRising", hub_schema)

    failed_order(hub, "order-1")
    failed_order(hub, "order-2")
    wait_until(
        lambda: prometheus.firing("TaskHubFailuresRising", hub_schema),
        timeout_s=60,
        interval_s=0.2,
    )
    [series] = prometheus.query(failed)
    assert series["value"][1] == "2"

    # Every panel of the Grafana dashboard returns data from this Prometheus.
    dashboard = json.loads(GRAFANA.read_text())
    empty = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$schema", hub_schema)
            if not prometheus.query(expr):
                empty.append((panel["title"], expr))
    assert empty == []


def _epoch(rfc3339: str) -> float:
    """Prometheus's timestamps (nanoseconds, a Z zone) as seconds."""
    whole, _, fraction = rfc3339.rstrip("Z").partition(".")
    moment = datetime.fromisoformat(whole + "+00:00").timestamp()
    return moment + float(f"0.{fraction or '0'}")
