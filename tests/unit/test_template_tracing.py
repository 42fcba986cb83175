"""X-Ray active tracing on every function (the template's Globals), and the namespace and service
names the serving functions print their call metrics (EMF) under, read into the settings."""

from __future__ import annotations

from typing import Any

import yaml

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, _CfnLoader, template_resource


def _doc() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.load(TEMPLATE.read_text(encoding="utf-8"), Loader=_CfnLoader)
    return doc


def test_every_function_is_traced_by_x_ray() -> None:
    doc = _doc()
    assert doc["Globals"]["Function"]["Tracing"] == "Active"
    functions = {n: r for n, r in doc["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    assert {"McpFunction", "CodeFunction", "IndexerFunction"} <= set(functions)
    assert all(r["Properties"].get("Tracing", "Active") == "Active" for r in functions.values())


def test_the_serving_functions_name_their_metrics() -> None:
    shared = _doc()["Globals"]["Function"]["Environment"]["Variables"]
    for name, service in (("McpFunction", "foldgate-mcp"), ("CodeFunction", "foldgate-code")):
        own = template_resource(name)["Properties"]["Environment"]["Variables"]
        env = {
            k: v for k, v in {**shared, **own}.items() if k.startswith("POWERTOOLS_") and isinstance(v, str)
        }
        settings = Settings.from_env(env)
        assert (settings.metrics_namespace, settings.metrics_service) == ("foldgate", service)


def test_span_export_is_off_unless_the_stack_names_an_otlp_endpoint() -> None:
    doc = _doc()
    assert doc["Parameters"]["OtlpEndpoint"]["Default"] == ""
    env = doc["Globals"]["Function"]["Environment"]["Variables"]
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "OtlpEndpoint"  # the loader reads !Ref X as X
    assert Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}).otlp_endpoint is None
    given = Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4318"})
    assert given.otlp_endpoint == "http://localhost:4318/v1/traces"
