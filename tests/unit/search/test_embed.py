"""Embedding providers: fallback to lexical, the real local model, Titan v2 at the botocore level."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from foldgate.search.embed import (
    BedrockEmbedder,
    Embedder,
    EmbeddingError,
    LocalEmbedder,
    NoEmbedder,
    open_provider,
)
from tests.unit.search.fakes import local_model

# ---- fallback to none -------------------------------------------------------------------------


def test_missing_model_falls_back_to_none_with_a_reason(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="foldgate.search.embed"):
        first = open_provider("local", model_dir=tmp_path / "nowhere")
        second = open_provider("local", model_dir=tmp_path / "nowhere")
    for provider in (first, second):
        assert isinstance(provider, NoEmbedder)
        assert provider.name == "none"
        assert provider.requested == "local"
        assert "make model" in provider.reason
    # Logged once per process and reason, not once per request.
    assert len([r for r in caplog.records if "unavailable" in r.getMessage()]) == 1


def test_broken_model_files_fall_back_to_none(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").write_bytes(b"not an onnx model")
    (tmp_path / "tokenizer.json").write_text("{}")
    provider = open_provider("local", model_dir=tmp_path)
    assert isinstance(provider, NoEmbedder)
    assert "cannot load" in provider.reason
    with pytest.raises(EmbeddingError):
        LocalEmbedder(tmp_path)


@pytest.mark.parametrize(
    ("kind", "opts", "reason"),
    [
        ("none", {}, "configured"),
        ("sparkles", {}, "unknown embedding provider"),
        ("local", {"no_such_option": 1}, "bad options"),
        ("bedrock", {"client": object(), "dimensions": 7}, "dimensions"),
    ],
)
def test_open_provider_never_raises(kind: str, opts: dict[str, object], reason: str) -> None:
    provider = open_provider(kind, **opts)
    assert isinstance(provider, NoEmbedder)
    assert reason in provider.reason
    assert provider.dim == 0
    with pytest.raises(EmbeddingError):
        provider.encode("anything")


# ---- the real local model (built by `make model`) ---------------------------------------------


def test_local_model_gives_unit_float32_vectors() -> None:
    model = local_model()
    assert isinstance(model, Embedder)
    assert model.name == "local"
    assert model.model_id.startswith("all-MiniLM-L6-v2-int8@")
    vec = model.encode("list the files in a directory")
    assert vec.dtype == np.float32
    assert vec.shape == (model.dim,) == (384,)
    assert float(np.linalg.norm(vec)) == pytest.approx(1.0, abs=1e-5)
    # One text at a time: the same text always gives the same vector.
    assert np.array_equal(vec, model.encode("list the files in a directory"))


def test_local_model_ranks_meaning_over_wording() -> None:
    model = local_model()
    query = model.encode("show me what is inside this folder")
    near = model.encode("list directory: List the entries of a directory.")
    far = model.encode("send message: Post a message to a Slack channel.")
    assert float(query @ near) > float(query @ far) + 0.2


@pytest.mark.parametrize(
    "text", ["", "   ", "?!*", "x" * 200_000, "日本語のテキスト", "a\ud800b", "\x00\x01", "word " * 5000]
)
def test_local_model_takes_hostile_text(text: str) -> None:
    vec = local_model().encode(text)
    assert vec.shape == (384,)
    assert np.isfinite(vec).all()


def test_local_model_through_open_provider() -> None:
    model = local_model()
    provider = open_provider("local", model_dir=model.model_dir, threads=1)
    assert provider.model_id == model.model_id


# ---- Bedrock (Titan Text Embeddings v2) via botocore's Stubber ---------------------------------


def _client() -> object:
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _response(payload: object) -> dict[str, object]:
    raw = json.dumps(payload).encode()
    return {"body": StreamingBody(io.BytesIO(raw), len(raw)), "contentType": "application/json"}


def test_bedrock_invokes_titan_v2_and_normalises() -> None:
    client = _client()
    embedder = BedrockEmbedder(client, dimensions=256)
    assert embedder.model_id == "amazon.titan-embed-text-v2:0/256"
    vector = [0.0] * 256
    vector[3] = 2.0
    with Stubber(client) as stub:
        stub.add_response(
            "invoke_model",
            _response({"embedding": vector, "inputTextTokenCount": 4}),
            {
                "modelId": "amazon.titan-embed-text-v2:0",
                "contentType": "application/json",
                "accept": "application/json",
                "body": json.dumps({"inputText": "create an issue", "dimensions": 256, "normalize": True}),
            },
        )
        out = embedder.encode("create an issue")
        stub.assert_no_pending_responses()
    assert out.dtype == np.float32
    assert out.shape == (256,)
    assert out[3] == pytest.approx(1.0)


def test_bedrock_errors_are_embedding_errors() -> None:
    client = _client()
    embedder = BedrockEmbedder(client, dimensions=512)
    with Stubber(client) as stub:
        stub.add_client_error("invoke_model", service_error_code="ThrottlingException", http_status_code=429)
        with pytest.raises(EmbeddingError, match="ThrottlingException"):
            embedder.encode("hello")
        stub.add_response("invoke_model", _response({"embedding": [1.0, 2.0]}))
        with pytest.raises(EmbeddingError, match="wrong shape"):
            embedder.encode("hello")
        stub.add_response("invoke_model", _response({"no": "embedding"}))
        with pytest.raises(EmbeddingError):
            embedder.encode("hello")
    # Empty input never reaches the service (Titan rejects it).
    with pytest.raises(EmbeddingError, match="empty"):
        embedder.encode("   ")


def test_bedrock_through_open_provider() -> None:
    provider = open_provider("bedrock", client=_client(), dimensions=1024)
    assert provider.name == "bedrock"
    assert provider.dim == 1024
