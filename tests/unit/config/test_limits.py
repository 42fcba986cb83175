"""Config validation against the cloud path's ceiling (issue 24, item 10): a server timeout_s or code
run timeout_ms the serving functions cannot honour is reported as a finding, never refused; locally
(no function timeout) and for values the operator did not set, nothing is reported."""

from __future__ import annotations

from typing import Any

from foldgate.config.limits import deadline_findings
from foldgate.config.tenant import TenantConfig, parse_tenant_config


def config(**server: Any) -> TenantConfig:
    return parse_tenant_config({"servers": [{"name": "crm", "url": "https://crm.example/mcp", **server}]})


def test_a_server_timeout_above_the_ceiling_is_a_finding() -> None:
    [finding] = deadline_findings(config(timeout_s=60), 29)
    assert "'crm'" in finding
    assert "timeout_s 60" in finding
    assert "27s" in finding  # 29 s less the 2 s margin
    assert "upstream_timeout" in finding


def test_api_gateways_limit_caps_a_longer_function_timeout() -> None:
    [finding] = deadline_findings(config(timeout_s=29), 120)
    assert "28s" in finding  # API Gateway's 30 s less the margin, not 120 s
    assert deadline_findings(config(timeout_s=28), 120) == []


def test_a_timeout_within_the_ceiling_is_fine() -> None:
    assert deadline_findings(config(timeout_s=27), 29) == []
    assert deadline_findings(config(timeout_s=10), 29) == []


def test_local_runs_report_nothing() -> None:
    assert deadline_findings(config(timeout_s=600), None) == []


def test_the_default_timeout_is_not_the_operators_to_fix() -> None:
    assert deadline_findings(config(), 29) == []


def test_a_disabled_server_is_not_judged() -> None:
    assert deadline_findings(config(timeout_s=60, enabled=False), 29) == []


def test_a_code_run_timeout_above_the_ceiling_is_a_finding() -> None:
    doc = {"servers": [], "code_execution": {"timeout_ms": 25_000}}
    [finding] = deadline_findings(parse_tenant_config(doc), 20)
    assert finding.startswith("code_execution: timeout_ms 25000")
    assert deadline_findings(parse_tenant_config(doc), 29) == []
