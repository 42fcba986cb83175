"""template.yaml offers index-time enrichment (issue 29): off by default, Bedrock's Converse API as the
cloud provider, granted to IndexerFunction alone and only when chosen, on the one model named, with
per-run caps in the indexer's environment that the settings read."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader, template_resource

FUNCTIONS = ("McpFunction", "CodeFunction", "IndexerFunction", "AdminFunction", "TaskWorkerFunction")
COND = "EnrichWithBedrock"


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def _conditional_statements(function: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Sid → (condition, statement) of a function's policies added under an !If."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for policy in template_resource(function)["Properties"]["Policies"]:
        if isinstance(policy, list) and len(policy) == 3 and isinstance(policy[1], dict):
            for statement in policy[1].get("Statement", []):
                out[statement["Sid"]] = (policy[0], statement)
    return out


def test_enrichment_is_off_by_default_and_bedrock_is_the_cloud_provider() -> None:
    params = _doc()["Parameters"]
    assert params["EnrichmentProvider"]["Default"] == "none"
    assert params["EnrichmentProvider"]["AllowedValues"] == ["none", "bedrock"]
    assert params["EnrichmentModelId"]["Default"] == "amazon.nova-micro-v1:0"
    assert _doc()["Conditions"][COND] == ["EnrichmentProvider", "bedrock"]


def test_only_the_indexer_may_invoke_the_enrichment_model_and_only_when_bedrock_is_chosen() -> None:
    for function in FUNCTIONS:
        granted = "EnrichmentViaBedrock" in _conditional_statements(function)
        assert granted is (function == "IndexerFunction"), function
    condition, statement = _conditional_statements("IndexerFunction")["EnrichmentViaBedrock"]
    assert condition == COND
    assert statement["Action"] == "bedrock:InvokeModel"  # the Converse API's permission
    assert statement["Resource"].endswith("::foundation-model/${EnrichmentModelId}")
    assert "*" not in statement["Resource"]


def test_only_the_indexer_is_told_to_enrich_and_its_caps_reach_the_settings() -> None:
    for function in FUNCTIONS:
        variables = template_resource(function)["Properties"]["Environment"]["Variables"]
        assert ("FOLDGATE_ENRICHMENT_PROVIDER" in variables) is (function == "IndexerFunction"), function
    assert "FOLDGATE_ENRICHMENT_PROVIDER" not in _doc()["Globals"]["Function"]["Environment"]["Variables"]
    variables = template_resource("IndexerFunction")["Properties"]["Environment"]["Variables"]
    assert variables["FOLDGATE_ENRICHMENT_PROVIDER"] == "EnrichmentProvider"
    assert variables["FOLDGATE_ENRICHMENT_MODEL"] == "EnrichmentModelId"
    params = _doc()["Parameters"]
    env = {name: str(params[ref]["Default"]) for name, ref in variables.items() if ref in params}
    settings = Settings.from_env(env)
    assert settings.enrichment_run_tools == params["EnrichmentRunTools"]["Default"]
    assert settings.enrichment_run_seconds == params["EnrichmentRunSeconds"]["Default"]


def test_a_runs_enrichment_leaves_the_indexer_time_to_embed_and_publish() -> None:
    timeout = template_resource("IndexerFunction")["Properties"]["Timeout"]
    assert _doc()["Parameters"]["EnrichmentRunSeconds"]["Default"] <= timeout / 2
