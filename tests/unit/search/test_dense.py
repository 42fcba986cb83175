"""Index time of semantic search: dense text, vector reuse by content hash, serialisation."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import numpy as np
import pytest

from foldgate.model.tool import Tool
from foldgate.search.codec import IndexFormatError
from foldgate.search.dense import DenseIndex, build_dense_index, dense_text
from foldgate.search.embed import EmbeddingError, NoEmbedder
from tests.unit.search.fakes import FakeEmbedder


def test_dense_text_is_name_words_and_description_only() -> None:
    tool = Tool(
        server="github",
        name="createPullRequest",
        description="  Open a pull request.  ",
        input_schema={"type": "object", "properties": {"head": {"type": "string", "description": "Branch"}}},
    )
    assert dense_text(tool) == "create pull request: Open a pull request."
    assert dense_text(Tool("s", "list_issues")) == "list issues"
    assert dense_text(Tool("s", "查询_天气", "Weather.")) == "查询 天气: Weather."


def test_every_tool_once_in_catalog_order(tiny_catalog: list[Tool]) -> None:
    provider = FakeEmbedder()
    dense = build_dense_index(provider, [*tiny_catalog, tiny_catalog[0]])
    assert dense is not None
    assert dense.keys == [t.key for t in tiny_catalog]
    assert dense.hashes == [t.content_hash for t in tiny_catalog]
    assert (dense.provider, dense.model_id, dense.dim) == ("fake", "fake-v1", 32)
    assert (dense.encoded, dense.reused, dense.failed) == (len(tiny_catalog), 0, 0)
    assert len(provider.calls) == len(tiny_catalog)
    assert dense.present.all()


def test_unchanged_tools_reuse_their_vectors(tiny_catalog: list[Tool]) -> None:
    first = build_dense_index(FakeEmbedder(), tiny_catalog)
    assert first is not None
    changed = dataclasses.replace(tiny_catalog[2], description="Fetch one issue by number.")
    added = Tool("jira", "create_ticket", "Create a Jira ticket.")
    catalog = [*tiny_catalog[:2], changed, *tiny_catalog[3:], added]

    provider = FakeEmbedder()
    second = build_dense_index(provider, catalog, first.reusable_for(provider))
    assert second is not None
    # Only the changed and the new tool are encoded again.
    assert provider.calls == [dense_text(changed), dense_text(added)]
    assert (second.encoded, second.reused) == (2, len(tiny_catalog) - 1)
    # Reused vectors are bit-identical: re-quantising a dequantised vector gives the same codes.
    for key in (tiny_catalog[0].key, tiny_catalog[-1].key):
        i, j = first.keys.index(key), second.keys.index(key)
        assert np.array_equal(first.matrix[i], second.matrix[j])


def test_a_new_model_rebuilds_everything(tiny_catalog: list[Tool]) -> None:
    first = build_dense_index(FakeEmbedder(model_id="fake-v1"), tiny_catalog)
    assert first is not None
    provider = FakeEmbedder(model_id="fake-v2")
    assert first.reusable_for(provider) == {}
    assert not first.compatible(provider)
    assert first.reusable_for(FakeEmbedder(dim=16, model_id="fake-v1")) == {}
    second = build_dense_index(provider, tiny_catalog, first.reusable_for(provider))
    assert second is not None
    assert second.encoded == len(tiny_catalog)
    assert second.model_id == "fake-v2"


def test_reuse_ignores_vectors_of_the_wrong_shape(tiny_catalog: list[Tool]) -> None:
    reuse: dict[str, Any] = {
        tiny_catalog[0].content_hash: [1.0, 2.0],
        tiny_catalog[1].content_hash: [np.nan] * 32,
    }
    provider = FakeEmbedder()
    dense = build_dense_index(provider, tiny_catalog[:2], reuse)
    assert dense is not None
    assert dense.encoded == 2


def test_none_provider_builds_nothing(tiny_catalog: list[Tool]) -> None:
    assert build_dense_index(NoEmbedder(), tiny_catalog) is None


def test_failed_tools_have_no_vector_and_are_retried(tiny_catalog: list[Tool]) -> None:
    bad = dense_text(tiny_catalog[1])
    dense = build_dense_index(FakeEmbedder(fail=lambda text: text == bad), tiny_catalog)
    assert dense is not None
    assert dense.failed == 1
    assert not dense.present[1]
    assert dense.present.sum() == len(tiny_catalog) - 1
    provider = FakeEmbedder()
    assert tiny_catalog[1].content_hash not in dense.reusable_for(provider)
    again = build_dense_index(provider, tiny_catalog, dense.reusable_for(provider))
    assert again is not None
    assert provider.calls == [bad]


def test_a_provider_that_is_down_aborts_the_build(tiny_catalog: list[Tool]) -> None:
    provider = FakeEmbedder(fail=lambda text: True)
    with pytest.raises(EmbeddingError, match="failed to embed"):
        build_dense_index(provider, tiny_catalog, max_failures=3)
    assert len(provider.calls) == 4


def test_round_trip_through_json(tiny_catalog: list[Tool]) -> None:
    dense = build_dense_index(FakeEmbedder(), tiny_catalog)
    assert dense is not None
    doc = json.loads(json.dumps(dense.to_doc()))
    loaded = DenseIndex.from_doc(doc)
    assert loaded.keys == dense.keys
    assert loaded.hashes == dense.hashes
    assert (loaded.provider, loaded.model_id, loaded.dim) == (dense.provider, dense.model_id, dense.dim)
    assert np.array_equal(loaded.matrix, dense.matrix)
    assert loaded.to_doc() == doc
    # int8 with a scale per vector: the stored vectors are within ~1e-4 cosine of the originals.
    original = FakeEmbedder().encode(dense_text(tiny_catalog[0]))
    row = loaded.matrix[0] / np.linalg.norm(loaded.matrix[0])
    assert float(row @ original) > 0.9999
    assert loaded.nbytes == len(tiny_catalog) * (32 + 4)


def test_empty_catalog_round_trips() -> None:
    dense = build_dense_index(FakeEmbedder(), [])
    assert dense is not None
    loaded = DenseIndex.from_doc(json.loads(json.dumps(dense.to_doc())))
    assert len(loaded) == 0
    assert loaded.matrix.shape == (0, 32)


def _doc(tiny_catalog: list[Tool]) -> dict[str, Any]:
    dense = build_dense_index(FakeEmbedder(), tiny_catalog[:3])
    assert dense is not None
    return dense.to_doc()


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(v=99),
        lambda d: d.pop("codes"),
        lambda d: d.update(codes="not base64!"),
        lambda d: d.update(codes=base64.b64encode(b"\x01\x02").decode()),
        lambda d: d.update(scales=base64.b64encode(b"\x00" * 4).decode()),
        lambda d: d.update(hashes="a b"),
        lambda d: d.update(hashes=7),
        lambda d: d.update(dim=0),
        lambda d: d.update(dim="x"),
        lambda d: d.update(keys=None),
    ],
)
def test_malformed_docs_are_format_errors(tiny_catalog: list[Tool], mutate: Any) -> None:
    doc = _doc(tiny_catalog)
    mutate(doc)
    with pytest.raises(IndexFormatError):
        DenseIndex.from_doc(doc)


def test_non_mapping_doc_is_a_format_error() -> None:
    with pytest.raises(IndexFormatError):
        DenseIndex.from_doc([])  # type: ignore[arg-type]
