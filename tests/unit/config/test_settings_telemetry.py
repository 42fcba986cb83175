"""Trace and metric settings come from the standard variables: OTLP export only when an endpoint is
set (and not disabled), headers and timeout as the OpenTelemetry specification spells them, and the
metrics' namespace and service from Powertools' variables."""

from __future__ import annotations

import pytest

from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


def test_no_endpoint_means_no_export() -> None:
    settings = Settings.from_env({})
    assert settings.otlp_endpoint is None
    assert (settings.otel_service_name, settings.metrics_namespace, settings.metrics_service) == (
        "foldgate",
        "foldgate",
        "foldgate",
    )


def test_the_base_endpoint_gets_the_traces_path_and_the_traces_endpoint_is_used_as_is() -> None:
    base = Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"})
    assert base.otlp_endpoint == "http://collector:4318/v1/traces"
    both = Settings.from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9999/custom",
        }
    )
    assert both.otlp_endpoint == "http://traces:9999/custom"


def test_headers_and_timeout_as_the_specification_spells_them() -> None:
    settings = Settings.from_env(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
            "OTEL_EXPORTER_OTLP_HEADERS": "X-Api-Key=a%3Db,team=core, broken",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "team=traces",
            "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        }
    )
    assert settings.otlp_headers == {"x-api-key": "a=b", "team": "traces"}
    assert settings.otlp_timeout_s == 2.5


@pytest.mark.parametrize(
    "off",
    [{"OTEL_SDK_DISABLED": "true"}, {"OTEL_TRACES_EXPORTER": "none"}, {"OTEL_TRACES_EXPORTER": "console"}],
)
def test_export_can_be_turned_off_the_standard_ways(off: dict[str, str]) -> None:
    assert (
        Settings.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", **off}).otlp_endpoint
        is None
    )


def test_a_protocol_other_than_http_protobuf_is_refused() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with pytest.raises(ConfigError, match="http/protobuf"):
        Settings.from_env(env)


def test_service_names_and_namespace_come_from_the_standard_variables() -> None:
    settings = Settings.from_env(
        {"POWERTOOLS_SERVICE_NAME": "foldgate-mcp", "POWERTOOLS_METRICS_NAMESPACE": "fg-prod"}
    )
    assert (settings.otel_service_name, settings.metrics_service, settings.metrics_namespace) == (
        "foldgate-mcp",
        "foldgate-mcp",
        "fg-prod",
    )
    assert (
        Settings.from_env({"OTEL_SERVICE_NAME": "gw", "POWERTOOLS_SERVICE_NAME": "x"}).otel_service_name
        == "gw"
    )


def test_foldgate_variables_win_over_the_standard_ones() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
        "FOLDGATE_OTLP_ENDPOINT": "http://b:4318/v1/traces",
    }
    assert Settings.from_env(env).otlp_endpoint == "http://b:4318/v1/traces"
