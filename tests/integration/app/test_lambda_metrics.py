"""Call metrics on the functions that serve agents: what the gateway records during an invocation is
printed as CloudWatch EMF (Powertools) when that invocation ends, once, under the template's
namespace and service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldgate.model.activity import ActivityEvent
from tests.lambdas import LambdaContext, event, load_function


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str | None]:
    (tmp_path / "foldgate.json").write_text(json.dumps({"servers": []}))
    return {
        "FOLDGATE_STORE": "sqlite",
        "FOLDGATE_SQLITE_PATH": str(tmp_path / "store.sqlite3"),
        "FOLDGATE_CONFIG_SOURCE": "file",
        "FOLDGATE_CONFIG_FILE": str(tmp_path / "foldgate.json"),
        "FOLDGATE_EMBEDDING_PROVIDER": "none",
        "POWERTOOLS_METRICS_NAMESPACE": "foldgate",
        "POWERTOOLS_SERVICE_NAME": "foldgate-test",
    }


def _emf(out: str) -> list[dict[str, Any]]:
    return [d for d in (json.loads(line) for line in out.splitlines() if line.startswith("{")) if "_aws" in d]


@pytest.mark.parametrize("function", ["mcp", "code"])
def test_an_invocations_calls_are_printed_as_emf_when_it_ends(
    function: str,
    env: dict[str, str | None],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    handler = load_function(function, f"{function}_metrics_app", env).handler
    gateway = handler.app.state.gateway
    listing = gateway.listing_json

    def recording_listing(*args: Any, **kwargs: Any) -> str:
        # Where the serving surfaces record their events: during the invocation.
        handler.metrics.record(
            ActivityEvent(tenant="default", method="tools/list", surface="mcp", outcome="ok", gateway_ms=1.5)
        )
        return str(listing(*args, **kwargs))

    monkeypatch.setattr(gateway, "listing_json", recording_listing)
    capsys.readouterr()
    response = handler(event("mcp_tools_list.json"), LambdaContext())
    assert response["statusCode"] == 200
    (doc,) = [d for d in _emf(capsys.readouterr().out) if "tenant" in d]
    assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "foldgate"
    assert (doc["service"], doc["tenant"], doc["server"], doc["outcome"]) == (
        "foldgate-test",
        "default",
        "-",
        "ok",
    )

    # The next invocation prints only its own events (none here).
    monkeypatch.setattr(gateway, "listing_json", listing)
    handler(event("healthz.json"), LambdaContext())
    assert _emf(capsys.readouterr().out) == []


@pytest.mark.parametrize("function", ["mcp", "code"])
def test_the_instance_reports_its_cache_quotas_and_drops_once_a_minute(
    function: str, env: dict[str, str | None], capsys: pytest.CaptureFixture[str]
) -> None:
    """The serving instance's own figures are in the function's log output as EMF: on its first
    invocation, then not again within the minute; counters as the change since the last report."""
    handler = load_function(function, f"{function}_instance_app", env).handler
    capsys.readouterr()
    assert handler(event("mcp_tools_list.json"), LambdaContext())["statusCode"] == 200
    docs = [d for d in _emf(capsys.readouterr().out) if "tenant" not in d]
    whole = next(d for d in docs if "kind" not in d)
    names = {m["Name"] for m in whole["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert names >= {
        "CacheBytes",
        "CacheEntries",
        "CacheBudgetBytes",
        "CacheHitRate",
        "CacheEvictions",
        "QuotaLeases",
        "QuotaRefused",
        "ActivityDropped",
        "MetricsDropped",
    }
    # Bounded dimensions: the service only (and the cache kind on the per-kind evictions).
    assert whole["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [["service"]]
    assert whole["service"] == "foldgate-test"
    value = {k: v[0] if isinstance(v, list) else v for k, v in whole.items()}
    assert value["CacheBudgetBytes"] > 0
    assert value["CacheBytes"] > 0  # the listing's catalog and config are held now
    for by_kind in (d for d in docs if "kind" in d):
        assert sorted(by_kind["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]) == ["kind", "service"]
    # Within the minute: no second report.
    handler(event("mcp_tools_list.json"), LambdaContext())
    assert [d for d in _emf(capsys.readouterr().out) if "tenant" not in d] == []
