"""OperatorPlans: everything an operator reads of a hub and does to it, as
plans (provider/client/plans.py). The command line runs them on its own
session (provider/client/on_connection.py), the dashboard on its TaskHub,
the metrics on each read's connection: each read and each action is written
once, here and in the groups it joins."""

from __future__ import annotations

from provider.client.flow_control import FlowControlPlans
from provider.client.hub_views import HubViews
from provider.client.instance_report import InstanceReports
from provider.client.instance_requests import InstanceRequests
from provider.client.operator_actions import OperatorActions
from provider.client.restarts import RestartPlans
from provider.client.schedules import SchedulePlans


class OperatorPlans(
    HubViews,
    InstanceReports,
    OperatorActions,
    InstanceRequests,
    RestartPlans,
    SchedulePlans,
    FlowControlPlans,
):
    """The runbook's reads and actions (docs/ops.md), on one hub."""
