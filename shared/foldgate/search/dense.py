"""Index time of semantic search: one embedding per tool, stored with the catalog version.

The indexer calls :func:`build_dense_index` once per catalog version, passing the previous version's
vectors (:meth:`DenseIndex.reusable_for`) so that only new or changed tools are embedded: a tool's
vector is reused exactly when its ``content_hash`` (and its enrichment, see :func:`vector_key`) is
unchanged and the provider's ``model_id`` is the same. :meth:`DenseIndex.to_doc` is JSON-able and
stored beside the lexical index; the request path loads it once per version with
:meth:`DenseIndex.from_doc`.

Vectors are stored as int8 with one float32 scale per vector (symmetric, max-abs): 384 bytes a tool
for MiniLM, a quarter of float32, and a cosine within ~1e-4 of the original. Quantising a
dequantised vector again gives the same codes, so reuse across versions never drifts.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from foldgate.model.enrichment import Enrichment
from foldgate.model.jsonutil import sha256_hex
from foldgate.model.tool import Tool
from foldgate.search.analysis import split_words
from foldgate.search.build import unique_tools
from foldgate.search.codec import IndexFormatError
from foldgate.search.cosine import CosineTable
from foldgate.search.embed import Embedder, EmbeddingError, Vector

__all__ = ["FORMAT_VERSION", "DenseIndex", "build_dense_index", "dense_text", "vector_key"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_Q = 127.0
# Descriptions past this are cut before tokenising (the model reads 256 tokens, ~1,000 characters).
_MAX_DESCRIPTION = 2000
# With an enrichment appended, the description is cut shorter so the generated text still falls
# inside the model's 256 tokens.
_MAX_ENRICHED_DESCRIPTION = 700
_MAX_ENRICHMENT = 300
_SEPARATORS = re.compile(r"[\s_\-./:]+")
_INT8: np.dtype[np.int8] = np.dtype("<i1")
_F32: np.dtype[np.float32] = np.dtype("<f4")


def dense_text(tool: Tool, enrichment: Enrichment | None = None) -> str:
    """What of a tool is embedded: its name as words, then its description, then (when the tool
    version has one) its generated hint. Not the generated queries: with the local gemma3-270m's
    output, hybrid MCPToolBench++ Recall@5 / nDCG@10 fell 0.974 / 0.900 → 0.959 / 0.878 with hint and
    queries, 0.970 / 0.899 with the hint alone (golden nDCG@10 0.861 → 0.846 and 0.857).

    Only these two: the lexical enrichments measured worse in hybrid on the tuning sets (golden
    nDCG@10 / MCPToolBench++ R@5 at the default weight): name + description 0.855 / 0.974; adding
    parameter names and descriptions 0.836 / 0.956; adding the server 0.836 / 0.970; description
    alone 0.852 / 0.970; the raw snake_case name 0.844 / 0.977. The lexical side already has those
    words; the model reads intent from prose, and schema vocabulary dilutes it.
    """
    name = tool.name if isinstance(tool.name, str) else ""
    words = " ".join(split_words(name)) if name.isascii() else _SEPARATORS.sub(" ", name).strip()
    extra = _enrichment_text(tool, enrichment)
    cut = _MAX_ENRICHED_DESCRIPTION if extra else _MAX_DESCRIPTION
    desc = tool.description.strip()[:cut] if isinstance(tool.description, str) else ""
    text = f"{words}: {desc}" if desc else words
    return f"{text} {extra}" if extra else text


def _enrichment_text(tool: Tool, enrichment: Enrichment | None) -> str:
    if enrichment is None or enrichment.content_hash != tool.content_hash:
        return ""
    return enrichment.hint[:_MAX_ENRICHMENT].strip()


def vector_key(tool: Tool, enrichment: Enrichment | None = None) -> str:
    """What a stored vector is reused by: the tool's content hash, or with an enrichment in its text,
    a hash of both (a new enrichment of an unchanged tool is embedded again)."""
    extra = _enrichment_text(tool, enrichment)
    return sha256_hex(f"{tool.content_hash}\n{extra}") if extra else tool.content_hash


def _quantize(vectors: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    scales = np.abs(vectors).max(axis=1).astype(np.float32) if len(vectors) else np.zeros(0, np.float32)
    safe = np.where(scales > 0, scales, 1.0).astype(np.float32)
    codes = np.rint(vectors / safe[:, None] * _Q).clip(-_Q, _Q).astype(np.int8)
    return codes, scales


class DenseIndex:
    """Embeddings of one catalog version's tools, by key, for one provider and model (immutable)."""

    def __init__(
        self,
        *,
        provider: str,
        model_id: str,
        keys: Sequence[str],
        hashes: Sequence[str],
        codes: npt.NDArray[np.int8],
        scales: npt.NDArray[np.float32],
    ) -> None:
        """Assemble an index from its arrays (``build_dense_index`` and :meth:`from_doc` call this).

        A tool whose embedding failed has scale 0: it scores 0 and is not offered for reuse.
        """
        n = len(keys)
        if len(hashes) != n or codes.ndim != 2 or codes.shape[0] != n or scales.shape != (n,):
            raise IndexFormatError("dense index arrays disagree in length")
        self.provider = provider
        self.model_id = model_id
        self.keys: list[str] = list(keys)
        self.hashes: list[str] = list(hashes)
        self._codes = codes
        self._scales = scales
        # Build statistics (0 after from_doc): how many tools were embedded now vs reused.
        self.encoded = 0
        self.reused = 0
        self.failed = 0

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self._codes.shape[1])

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def nbytes(self) -> int:
        """Bytes of vector data (int8 codes + float32 scales)."""
        return int(self._codes.nbytes + self._scales.nbytes)

    @property
    def codes(self) -> npt.NDArray[np.int8]:
        """The int8 codes, one row per key."""
        return self._codes

    @property
    def scales(self) -> npt.NDArray[np.float32]:
        """Each row's float32 scale (its largest absolute component; 0: no vector)."""
        return self._scales

    @cached_property
    def cosines(self) -> CosineTable:
        """The rows prepared for query time (:mod:`foldgate.search.cosine`), built once per version."""
        return CosineTable(self._codes, self._scales)

    @cached_property
    def matrix(self) -> npt.NDArray[np.float32]:
        """Dequantised float32 vectors, one row per key (built once, on first use: ~17 MB on 11k tools)."""
        return (self._codes.astype(np.float32) * (self._scales / np.float32(_Q))[:, None]).astype(np.float32)

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Per row: whether the tool has an embedding."""
        return np.asarray(self._scales > 0)

    def compatible(self, provider: Embedder) -> bool:
        """Whether ``provider``'s query vectors live in this index's vector space."""
        return provider.dim > 0 and provider.model_id == self.model_id and provider.dim == self.dim

    def reusable_for(self, provider: Embedder) -> dict[str, Vector]:
        """content hash → vector for :func:`build_dense_index`'s ``reuse``; {} if the model changed."""
        if not self.compatible(provider):
            return {}
        mat, present = self.matrix, self.present
        return {h: mat[i] for i, h in enumerate(self.hashes) if present[i]}

    # ---- serialisation -----------------------------------------------------------------------

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able form: base64 little-endian int8 codes and float32 scales; see :meth:`from_doc`."""
        return {
            "v": FORMAT_VERSION,
            "provider": self.provider,
            "model_id": self.model_id,
            "dim": self.dim,
            "keys": self.keys,
            # Hex digests never contain spaces: one joined string parses faster than a list.
            "hashes": " ".join(self.hashes),
            "codes": base64.b64encode(self._codes.astype(_INT8).tobytes()).decode("ascii"),
            "scales": base64.b64encode(self._scales.astype(_F32).tobytes()).decode("ascii"),
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> DenseIndex:
        """Load an index written by :meth:`to_doc` (a few ms); raises IndexFormatError if malformed."""
        if not isinstance(doc, Mapping):
            raise IndexFormatError("dense index: expected a JSON object")
        if doc.get("v") != FORMAT_VERSION:
            raise IndexFormatError(f"dense index: unsupported format version {doc.get('v')!r}")
        try:
            keys = [str(k) for k in doc["keys"]]
            dim = int(doc["dim"])
            hashes_text = doc["hashes"]
            if not isinstance(hashes_text, str) or dim <= 0:
                raise IndexFormatError("dense index: bad hashes or dim")
            codes = np.frombuffer(base64.b64decode(doc["codes"], validate=True), dtype=_INT8)
            scales = np.frombuffer(base64.b64decode(doc["scales"], validate=True), dtype=_F32)
            if codes.size != len(keys) * dim:
                raise IndexFormatError("dense index: codes do not match keys x dim")
            return cls(
                provider=str(doc["provider"]),
                model_id=str(doc["model_id"]),
                keys=keys,
                hashes=hashes_text.split(" ") if hashes_text else [],
                codes=codes.reshape(len(keys), dim),
                scales=scales.astype(np.float32),
            )
        except IndexFormatError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, binascii.Error) as exc:
            raise IndexFormatError(f"dense index: {exc!r}") from exc


def _reused(reuse: Mapping[str, Any] | None, digest: str, dim: int) -> Vector | None:
    if not reuse:
        return None
    vec = reuse.get(digest)
    if vec is None:
        return None
    arr = np.asarray(vec, dtype=np.float32).reshape(-1)
    if arr.shape != (dim,) or not np.isfinite(arr).all():
        return None
    return arr


def build_dense_index(
    provider: Embedder,
    tools: Sequence[Tool],
    reuse: Mapping[str, Any] | None = None,
    *,
    max_failures: int = 10,
    enrichments: Mapping[str, Enrichment] | None = None,
) -> DenseIndex | None:
    """Embed every tool (first of each key, in order, as the lexical index numbers them), with its
    enrichment (by canonical key) appended to its text where there is one.

    ``reuse`` maps :func:`vector_key` (``Tool.content_hash`` for a tool without enrichment) → a
    vector from the same model (use :meth:`DenseIndex.reusable_for` on the previous version): those
    tools are not encoded again.
    Returns None for the ``none`` provider. A tool that fails to embed gets no vector (it is retried
    next time); past ``max_failures`` failures the provider is taken to be down and EmbeddingError
    is raised, so the indexer publishes lexical search rather than a mostly empty dense index.
    """
    if provider.dim <= 0:
        return None
    unique = unique_tools(tools)
    dim = provider.dim
    vectors = np.zeros((len(unique), dim), dtype=np.float32)
    encoded = reused = failed = 0
    enriched = enrichments or {}
    keys = [vector_key(t, enriched.get(t.key)) for t in unique]
    for i, tool in enumerate(unique):
        vec = _reused(reuse, keys[i], dim)
        if vec is not None:
            reused += 1
        else:
            try:
                vec = provider.encode(dense_text(tool, enriched.get(tool.key)))
                encoded += 1
            except EmbeddingError as exc:
                failed += 1
                log.warning("cannot embed %s: %s", tool.key, exc.message)
                if failed > max_failures:
                    raise EmbeddingError(f"{failed} tools failed to embed; last: {exc.message}") from exc
                continue
        vectors[i] = vec
    codes, scales = _quantize(vectors)
    index = DenseIndex(
        provider=provider.name,
        model_id=provider.model_id,
        keys=[t.key for t in unique],
        hashes=keys,
        codes=codes,
        scales=scales,
    )
    index.encoded, index.reused, index.failed = encoded, reused, failed
    return index
