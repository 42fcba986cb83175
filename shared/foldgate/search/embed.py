"""Text embedding providers behind one small interface: the dense signal of semantic search.

Three providers, all with ``name``, ``model_id``, ``dim`` and ``encode(text) -> float32 unit vector``:

- ``local``: all-MiniLM-L6-v2, int8 ONNX (``make model`` builds it), run by onnxruntime + tokenizers
  in-process: ~3-4 ms a query on one core, no network, no torch;
- ``bedrock``: Amazon Titan Text Embeddings v2 through ``bedrock-runtime`` ``InvokeModel``;
- ``none``: lexical search only; it also stands in, with a ``reason``, for a provider that could not
  be opened (:func:`open_provider` never raises for a missing or broken model).

``model_id`` names the exact vectors a provider produces (the local one includes the model file's
hash): a dense index built by another provider or model is never scored against this one's queries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from foldgate.config.model_home import DEFAULT_MODEL_NAME, install_hint, model_dirs
from foldgate.errors import FoldgateError

__all__ = [
    "DEFAULT_MODEL_NAME",
    "BedrockEmbedder",
    "Embedder",
    "EmbeddingError",
    "LocalEmbedder",
    "NoEmbedder",
    "Vector",
    "default_model_dirs",
    "open_provider",
]

log = logging.getLogger(__name__)

Vector = npt.NDArray[np.float32]

# The model's trained max_seq_length. Tool descriptions past it add little; queries rarely reach it.
_MAX_TOKENS = 256
# Characters are cut before tokenising so a hostile 10 MB query costs no more than a long one.
_MAX_CHARS = 4096
_TITAN_MODEL = "amazon.titan-embed-text-v2:0"
_TITAN_DIMS = (256, 512, 1024)
# Titan v2 takes up to 8k tokens (50k characters); tool texts and queries never need that much.
_TITAN_MAX_CHARS = 20_000


class EmbeddingError(FoldgateError):
    """A text could not be embedded (provider unavailable, model failure, service error)."""

    code = "embedding_error"


@runtime_checkable
class Embedder(Protocol):
    """What search needs of an embedding provider."""

    @property
    def name(self) -> str:
        """The provider kind: ``local``, ``bedrock`` or ``none``."""
        ...

    @property
    def model_id(self) -> str:
        """Identifies the vectors: equal ids ⇔ comparable vectors."""
        ...

    @property
    def dim(self) -> int:
        """Vector length (0 for ``none``)."""
        ...

    def encode(self, text: str) -> Vector:
        """The unit-norm float32 embedding of ``text``; raises EmbeddingError when it cannot."""
        ...


def _unit(vec: Any) -> Vector:
    out = np.asarray(vec, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(out))
    if not np.isfinite(norm) or norm <= 0.0:
        raise EmbeddingError("embedding is zero or not finite")
    return out / np.float32(norm)


def _text(text: object, limit: int) -> str:
    return text[:limit] if isinstance(text, str) else ""


class NoEmbedder:
    """Lexical only: ``encode`` always raises. ``reason`` says why (``configured`` or a load failure)."""

    name = "none"
    model_id = "none"
    dim = 0

    def __init__(self, reason: str = "configured", *, requested: str = "none") -> None:
        self.reason = reason
        self.requested = requested

    def encode(self, text: str) -> Vector:
        """Always raises EmbeddingError: this provider has no vectors."""
        raise EmbeddingError(f"no embedding provider ({self.reason})")

    def __repr__(self) -> str:
        return f"NoEmbedder(requested={self.requested!r}, reason={self.reason!r})"


def default_model_dirs(name: str = DEFAULT_MODEL_NAME) -> list[Path]:
    """Where the local model is looked for when no directory is configured, in order
    (:func:`foldgate.config.model_home.model_dirs`): a checkout's ``.model/<name>`` (``make model``'s
    cache), the per-user data directory (``foldgate model install``), then ``/opt/model/<name>``, where
    the Lambda dependency layer puts it."""
    return model_dirs(None, name)


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX, pooled and normalised in the graph) on onnxruntime, in-process.

    One text per ``session.run``: dynamic int8 quantisation scales activations per call, so a text's
    vector would shift slightly with whatever else shared its batch; one at a time, the index and the
    queries are encoded exactly alike. Thread-safe (onnxruntime sessions are).
    """

    name = "local"

    def __init__(self, model_dir: str | Path | None = None, *, threads: int = 1) -> None:
        """Load ``model.onnx`` + ``tokenizer.json`` from ``model_dir`` (default: :func:`default_model_dirs`).

        ``threads`` is onnxruntime's intra-op pool: one query is a small graph, and 1 thread is
        within ~15% of 2 here while leaving the other core to the rest of the request.
        Raises EmbeddingError when the files are missing or do not load.
        """
        started = time.perf_counter()
        directory = self._locate(model_dir)
        try:
            # numpy, onnxruntime and the provider's client load only when that provider is opened.
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(directory / "tokenizer.json"))
            tok.no_padding()
            tok.enable_truncation(max_length=_MAX_TOKENS)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = max(1, int(threads))
            opts.inter_op_num_threads = 1
            opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            # Idle pool threads must not spin: on Lambda they would burn the CPU the request needs.
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.log_severity_level = 3
            session = ort.InferenceSession(
                str(directory / "model.onnx"), opts, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors; all mean "cannot load"
            raise EmbeddingError(f"cannot load the local model from {directory}: {exc}") from exc
        inputs = {i.name for i in session.get_inputs()}
        self._feeds = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in inputs]
        self._session = session
        self._tokenizer = tok
        self.model_dir = directory
        manifest = self._manifest(directory)
        self._model_id = str(manifest.get("model_id") or self._hash_id(directory))
        width = session.get_outputs()[0].shape[-1]
        self._dim = width if isinstance(width, int) and width > 0 else int(manifest.get("dim") or 384)
        self.load_seconds = time.perf_counter() - started

    @staticmethod
    def _locate(model_dir: str | Path | None) -> Path:
        candidates = [Path(model_dir)] if model_dir is not None else default_model_dirs()
        for d in candidates:
            if (d / "model.onnx").is_file() and (d / "tokenizer.json").is_file():
                return d
        where = ", ".join(str(d) for d in candidates)
        raise EmbeddingError(f"no local model (model.onnx + tokenizer.json) in {where}: {install_hint()}")

    @staticmethod
    def _manifest(directory: Path) -> dict[str, Any]:
        try:
            doc = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    @staticmethod
    def _hash_id(directory: Path) -> str:
        # No manifest (hand-copied files): the file hash still tells models apart.
        digest = hashlib.sha256((directory / "model.onnx").read_bytes()).hexdigest()
        return f"{DEFAULT_MODEL_NAME}@{digest[:12]}"

    @property
    def model_id(self) -> str:
        """``all-MiniLM-L6-v2-int8@<sha256 prefix of model.onnx>``."""
        return self._model_id

    @property
    def dim(self) -> int:
        """384."""
        return self._dim

    def encode(self, text: str) -> Vector:
        """Embed one text (cut to 4,096 characters, then 256 tokens); never batched, see the class."""
        body = _text(text, _MAX_CHARS)
        try:
            try:
                enc = self._tokenizer.encode(body)
            except Exception:  # lone surrogates: the Rust tokenizer only takes valid Unicode
                enc = self._tokenizer.encode(body.encode("utf-8", "replace").decode("utf-8"))
            arrays = {
                "input_ids": enc.ids,
                "attention_mask": enc.attention_mask,
                "token_type_ids": enc.type_ids,
            }
            feed = {n: np.asarray([arrays[n]], dtype=np.int64) for n in self._feeds}
            out = self._session.run(None, feed)[0]
        except Exception as exc:  # tokenizers' and onnxruntime's errors are untyped
            raise EmbeddingError(f"local model failed: {exc}") from exc
        return _unit(out[0])


class BedrockEmbedder:
    """Amazon Titan Text Embeddings v2 via ``bedrock-runtime`` ``InvokeModel`` (normalised vectors).

    Pass a boto3 ``bedrock-runtime`` client (the caller owns region, credentials and retries);
    without one, a default client is created. ``dimensions`` is 256, 512 or 1024.
    """

    name = "bedrock"

    def __init__(
        self,
        client: Any = None,
        *,
        model: str = _TITAN_MODEL,
        dimensions: int = 512,
        region: str | None = None,
    ) -> None:
        """Raises EmbeddingError for unsupported dimensions or when no client can be created."""
        if dimensions not in _TITAN_DIMS:
            raise EmbeddingError(f"Titan v2 dimensions must be one of {_TITAN_DIMS}, got {dimensions!r}")
        if client is None:
            try:
                # numpy, onnxruntime and the provider's client load only when that provider is opened.
                import boto3

                client = boto3.client("bedrock-runtime", region_name=region)
            except Exception as exc:  # botocore raises many unrelated types for a missing region/creds
                raise EmbeddingError(f"cannot create a bedrock-runtime client: {exc}") from exc
        self._client = client
        self._model = model
        self._dims = dimensions
        self.load_seconds = 0.0

    @property
    def model_id(self) -> str:
        """``<bedrock model id>/<dimensions>``: another size is another vector space."""
        return f"{self._model}/{self._dims}"

    @property
    def dim(self) -> int:
        """The configured ``dimensions``."""
        return self._dims

    def encode(self, text: str) -> Vector:
        """Embed one text with one InvokeModel call; any service or payload error is EmbeddingError."""
        body = _text(text, _TITAN_MAX_CHARS)
        if not body.strip():
            # Titan rejects empty input; an empty text has no meaning to embed anyway.
            raise EmbeddingError("empty text")
        payload = json.dumps({"inputText": body, "dimensions": self._dims, "normalize": True})
        try:
            resp = self._client.invoke_model(
                modelId=self._model, contentType="application/json", accept="application/json", body=payload
            )
            doc = json.loads(resp["body"].read())
            vec = doc["embedding"]
        except Exception as exc:  # ClientError, throttling, timeouts, malformed bodies: all one outcome
            raise EmbeddingError(f"bedrock embedding failed: {exc}") from exc
        if not isinstance(vec, list) or len(vec) != self._dims:
            raise EmbeddingError("bedrock returned an embedding of the wrong shape")
        return _unit(vec)


_logged: set[tuple[str, str]] = set()
_logged_lock = threading.Lock()


def _fallback(kind: str, reason: str) -> NoEmbedder:
    with _logged_lock:
        first = (kind, reason) not in _logged
        _logged.add((kind, reason))
    if first:
        # Once per process and reason: a missing model must not flood the logs of every request.
        log.warning("embedding provider %r unavailable, search is lexical only: %s", kind, reason)
    return NoEmbedder(reason, requested=kind)


def open_provider(kind: str, **opts: Any) -> Embedder:
    """The provider ``kind`` (``local``, ``bedrock``, ``none``) built with ``opts``; never raises.

    ``local`` takes ``model_dir`` and ``threads``; ``bedrock`` takes ``client``, ``model``,
    ``dimensions`` and ``region``. A provider that cannot be opened (no model built, bad options,
    unknown kind) comes back as :class:`NoEmbedder` whose ``reason`` says why, logged once.
    """
    try:
        if kind == "local":
            return LocalEmbedder(**opts)
        if kind == "bedrock":
            return BedrockEmbedder(**opts)
        if kind == "none":
            return NoEmbedder("configured")
        return _fallback(str(kind), f"unknown embedding provider {kind!r}")
    except EmbeddingError as exc:
        return _fallback(kind, exc.message)
    except TypeError as exc:  # unknown option names
        return _fallback(kind, f"bad options: {exc}")
