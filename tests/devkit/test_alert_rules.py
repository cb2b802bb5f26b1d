"""The example alerting rules and the metrics page name what the package
publishes: a metric renamed in the code fails here, not in a user's
Prometheus. No database."""

from __future__ import annotations

import re

import yaml
from prometheus_client import CollectorRegistry

from provider.metrics.collector import HubFamilies
from provider.metrics.provider_metrics import ProviderMetrics
from provider.metrics.worker_counters import COUNTERS
from tests.support.paths import REPO

RULES = REPO / "docs" / "examples" / "taskhub-alerts.yml"
PAGE = REPO / "docs" / "metrics-and-alerts.md"


def published() -> set[str]:
    """Every series name the package's three sources publish."""
    names = {family.name for family in HubFamilies().all()}
    names |= {f"{name}_total" for _, name, _ in COUNTERS}
    registry = CollectorRegistry()
    ProviderMetrics(registry)
    suffixes = {"counter": ("_total",), "histogram": ("", "_bucket", "_sum", "_count")}
    for family in registry.collect():  # labelled: no sample until a call is timed
        names |= {family.name + suffix for suffix in suffixes[family.type]}
    return names


def named_in(text: str) -> set[str]:
    return set(re.findall(r"\b(?:taskhub|duroxide)_[a-z_]+\b", text))


def test_every_metric_an_alert_names_is_published() -> None:
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    assert len(rules) >= 8
    named = set().union(*(named_in(rule["expr"]) for rule in rules))
    assert named and sorted(named - published()) == []


def test_the_page_lists_every_metric_and_every_alert() -> None:
    page = PAGE.read_text()
    shown = {name for name in published() if not name.endswith(("_bucket", "_sum", "_count"))}
    assert sorted(name for name in shown if f"`{name}`" not in page) == []
    rules = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    assert [rule["alert"] for rule in rules if rule["alert"] not in page] == []
