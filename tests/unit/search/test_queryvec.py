"""The query vectors of one request: each text encoded alone, several side by side, failures per text."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from foldgate.search import queryvec
from foldgate.search.embed import EmbeddingError, Vector
from foldgate.search.queryvec import encode_side_by_side, query_vector
from tests.unit.search.fakes import FakeEmbedder


class _Slow(FakeEmbedder):
    """Takes longer for earlier texts, so completion order is the reverse of the request order."""

    def __init__(self, delays: dict[str, float]) -> None:
        super().__init__()
        self._delays = delays
        self.threads: list[str] = []

    def encode(self, text: str) -> Vector:
        self.threads.append(threading.current_thread().name)
        time.sleep(self._delays.get(text, 0.0))
        return super().encode(text)


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool as on a two-core machine, whatever this machine has."""
    monkeypatch.setattr(queryvec, "_workers", lambda: 2)


def test_vectors_come_back_in_request_order_and_equal_encoding_alone(two_cores: None) -> None:
    texts = ["read a file", "commit the changes", "open a pull request"]
    provider = _Slow({"read a file": 0.05, "commit the changes": 0.02})
    got = encode_side_by_side(provider, texts, provider.dim).result()
    alone = FakeEmbedder()
    for text, vec in zip(texts, got, strict=True):
        assert isinstance(vec, np.ndarray)
        np.testing.assert_array_equal(vec, alone.encode(text))


def test_several_texts_are_encoded_at_the_same_time(two_cores: None) -> None:
    """Two encodes that each wait for the other can only both finish if they run concurrently."""
    meet = threading.Barrier(2, timeout=5)

    class Meeting(FakeEmbedder):
        def encode(self, text: str) -> Vector:
            meet.wait()
            return super().encode(text)

    provider = Meeting()
    got = encode_side_by_side(provider, ["send an email", "book a flight"], provider.dim).result()
    assert all(isinstance(v, np.ndarray) for v in got)


def test_one_text_or_one_core_is_encoded_in_the_calling_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    here = threading.current_thread().name
    monkeypatch.setattr(queryvec, "_workers", lambda: 2)
    provider = _Slow({})
    encode_side_by_side(provider, ["only one need"], provider.dim).result()
    assert provider.threads == [here]
    monkeypatch.setattr(queryvec, "_workers", lambda: 1)
    provider = _Slow({})
    encode_side_by_side(provider, ["first need", "second need"], provider.dim).result()
    assert provider.threads == [here, here]


def test_a_failing_text_is_returned_as_its_error_and_the_others_still_encode(two_cores: None) -> None:
    provider = FakeEmbedder(fail=lambda text: text == "broken")
    got = encode_side_by_side(provider, ["send an email", "broken", "book a flight"], provider.dim).result()
    assert isinstance(got[0], np.ndarray)
    assert isinstance(got[2], np.ndarray)
    assert isinstance(got[1], EmbeddingError)


@pytest.mark.parametrize("bad", [np.full(32, np.nan, dtype=np.float32), np.ones(7, dtype=np.float32)])
def test_a_vector_of_the_wrong_shape_or_not_finite_is_refused(bad: Vector) -> None:
    provider = FakeEmbedder(vectors={"odd": bad})
    with pytest.raises(ValueError, match="query vector of shape"):
        query_vector(provider, "odd", 32)
    assert isinstance(encode_side_by_side(provider, ["odd"], 32).result()[0], ValueError)
