"""template.yaml: each serving instance's cache budget is a stack parameter (FOLDGATE_CACHE_MB, read
into the settings), and a dashboard charts the instance figures foldgate.telemetry.instance prints,
by the names and service dimension it prints them under."""

from __future__ import annotations

import json
from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader
from foldgate.telemetry.instance import COUNTERS, GAUGES


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def test_the_cache_budget_is_a_parameter_every_function_reads() -> None:
    doc = _doc()
    assert doc["Parameters"]["CacheMb"]["Default"] == Settings().cache_mb
    shared = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert shared["FOLDGATE_CACHE_MB"] == "CacheMb"  # the loader reads !Ref as the name it refers to
    assert Settings.from_env({"FOLDGATE_CACHE_MB": "512"}).cache_mb == 512


def test_the_dashboard_charts_the_instance_figures_by_their_printed_names() -> None:
    dashboard = _doc()["Resources"]["ServingDashboard"]
    assert dashboard["Type"] == "AWS::CloudWatch::Dashboard"
    body, names = dashboard["Properties"]["DashboardBody"]  # !Sub [body, names]
    # The body is JSON once its ${...} are substituted (a dashboard CloudFormation cannot parse fails late).
    filled = body
    for key, value in {**names, "AWS::Region": "eu-west-1"}.items():
        filled = filled.replace("${" + key + "}", value)
    widgets = json.loads(filled)["widgets"]
    charted = {m[1] for w in widgets for m in w["properties"]["metrics"]}
    assert charted <= set(GAUGES) | set(COUNTERS)
    assert {
        "CacheBytes",
        "CacheHitRate",
        "CacheEvictions",
        "QuotaLeases",
        "QuotaRefused",
        "ActivityDropped",
    } <= charted
    assert {m[3] for w in widgets for m in w["properties"]["metrics"]} == {"foldgate-mcp", "foldgate-code"}
    assert all(m[0] == "foldgate" and m[2] == "service" for w in widgets for m in w["properties"]["metrics"])


def test_the_secret_store_is_a_parameter_every_function_reads_and_the_grant_key_may_seal_for() -> None:
    doc = _doc()
    assert doc["Parameters"]["SecretStore"]["AllowedValues"] == ["ssm", "table"]
    assert doc["Parameters"]["SecretStore"]["Default"] == Settings().secret_store
    shared = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert shared["FOLDGATE_SECRET_STORE"] == "SecretStore"
    assert Settings.from_env({"FOLDGATE_SECRET_STORE": "table"}).secret_store == "table"
    # The functions that send headers open sealed secrets with the grants' key (same context key).
    statements = doc["Resources"]["GrantKey"]["Properties"]["KeyPolicy"]["Statement"]
    sealing = next(s for s in statements if s.get("Sid") == "FunctionsSealAndOpenGrants")
    roles = set(sealing["Principal"]["AWS"])
    assert {"McpFunctionRole.Arn", "CodeFunctionRole.Arn", "IndexerFunctionRole.Arn"} <= roles
