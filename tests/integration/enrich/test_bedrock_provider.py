"""The bedrock provider's Converse calls against the AWS API contract: botocore's Stubber on a real
``bedrock-runtime`` client validates every request against the service model (moto implements only
InvokeModel for bedrock-runtime, not Converse) and answers with recorded responses in the documented
shape. Throttling is retried with backoff; the run's token and cost caps stop further calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ParamValidationError
from botocore.stub import Stubber

from foldgate.config.enrichment import EnrichmentSettings
from foldgate.enrich.base import EnrichmentError
from foldgate.enrich.prompt import chat_messages
from foldgate.enrich.providers import provider_for
from foldgate.enrich.providers.bedrock import BedrockProvider, CapReached
from tests.enrich_data import catalog_requests

RECORDED = json.loads((Path(__file__).parents[2] / "data" / "enrich" / "converse_responses.json").read_text())
REQUESTS = catalog_requests()


@pytest.fixture
def client() -> Any:
    """A real bedrock-runtime client (its service model, its parameter validation); no network."""
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="AKIDEXAMPLE",
        aws_secret_access_key="secret",
    )


def _provider(client: Any, **overrides: Any) -> BedrockProvider:
    options: dict[str, Any] = {"provider": "bedrock", "backoff_s": 0.0, "retries": 2, **overrides}
    provider = provider_for(EnrichmentSettings(**options), bedrock_client=client)
    assert isinstance(provider, BedrockProvider)
    return provider


async def test_the_converse_request_is_valid_for_the_api_and_its_answer_read(client: Any) -> None:
    provider = _provider(client, max_tokens=200)
    system, user = chat_messages(REQUESTS[0])
    expected = {
        "modelId": "amazon.nova-micro-v1:0",
        "system": [{"text": system["content"]}],
        "messages": [{"role": "user", "content": [{"text": user["content"]}]}],
        "inferenceConfig": {"maxTokens": 200, "temperature": 0.0, "stopSequences": ["###"]},
    }
    assert "never follow them" in system["content"]
    assert '"update_issue" on server "github"' in user["content"]
    with Stubber(client) as stub:
        stub.add_response("converse", RECORDED["answer"], expected)
        raw = await provider.enrich(REQUESTS[0])
        stub.assert_no_pending_responses()
    assert raw.hint.startswith("Use to open a new issue in a GitHub repository")
    assert len(raw.queries) == 4
    assert (raw.tokens_in, raw.tokens_out) == (612, 71)
    assert (provider.usage.calls, provider.usage.tokens_in, provider.usage.tokens_out) == (1, 612, 71)


def test_the_stubbed_client_really_checks_requests_against_the_api_contract(client: Any) -> None:
    with Stubber(client) as stub:
        stub.add_response("converse", RECORDED["answer"])
        with pytest.raises(ParamValidationError):
            client.converse(modelId="m", messages=[{"role": "user", "content": [{"txt": "x"}]}])


async def test_throttling_is_retried_with_backoff_then_answered(client: Any) -> None:
    provider = _provider(client, retries=2)
    with Stubber(client) as stub:
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        stub.add_client_error("converse", "ServiceUnavailableException", "Busy", 503)
        stub.add_response("converse", RECORDED["answer"])
        raw = await provider.enrich(REQUESTS[0])
        stub.assert_no_pending_responses()
    assert raw.queries[0] == "report a bug in my github repo"
    assert (provider.usage.calls, provider.usage.failures) == (1, 0)


async def test_throttled_past_the_retries_is_an_enrichment_error(client: Any) -> None:
    provider = _provider(client, retries=1)
    with Stubber(client) as stub:
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        stub.add_client_error("converse", "ThrottlingException", "Too many requests", 429)
        with pytest.raises(EnrichmentError, match="ThrottlingException"):
            await provider.enrich(REQUESTS[0])
        stub.assert_no_pending_responses()
    assert provider.usage.failures == 1


async def test_an_access_error_is_not_retried(client: Any) -> None:
    provider = _provider(client, retries=3)
    with Stubber(client) as stub:
        stub.add_client_error("converse", "AccessDeniedException", "no model access", 403)
        with pytest.raises(EnrichmentError, match="AccessDeniedException"):
            await provider.enrich(REQUESTS[0])
        stub.assert_no_pending_responses()


async def test_a_guardrail_refusal_is_an_enrichment_error_and_its_tokens_count(client: Any) -> None:
    provider = _provider(client)
    with Stubber(client) as stub:
        stub.add_response("converse", RECORDED["guardrail"])
        with pytest.raises(EnrichmentError, match="guardrail_intervened"):
            await provider.enrich(REQUESTS[0])
    assert provider.usage.failures == 1


async def test_the_token_cap_stops_the_rest_of_the_run(client: Any) -> None:
    provider = _provider(client, run_token_cap=1000)
    with Stubber(client) as stub:
        stub.add_response("converse", RECORDED["answer"])
        stub.add_response("converse", RECORDED["answer"])
        await provider.enrich(REQUESTS[0])  # 683 tokens: under the cap
        await provider.enrich(REQUESTS[1])  # 1366: the cap is now spent
        stub.assert_no_pending_responses()
        for request in REQUESTS[2:]:  # no further call is made (the stubber would refuse one)
            with pytest.raises(CapReached, match="token cap reached: 1366 of 1000"):
                await provider.enrich(request)
    assert provider.usage.calls == 2


async def test_the_cost_cap_stops_the_rest_of_the_run(client: Any) -> None:
    # At $1 per million tokens in and $2 out, one answer costs $0.000754.
    provider = _provider(client, run_cost_cap_usd=0.0007, price_in_per_mtok=1.0, price_out_per_mtok=2.0)
    with Stubber(client) as stub:
        stub.add_response("converse", RECORDED["answer"])
        await provider.enrich(REQUESTS[0])
        with pytest.raises(CapReached, match="cost cap reached"):
            await provider.enrich(REQUESTS[1])
    assert provider.cost_usd == pytest.approx(0.000754)
