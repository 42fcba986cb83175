"""Train the cue-and-vector scorer (foldgate.guard.semantic; part of make guard-model) and write
shared/foldgate/guard/data/semantic_model.json with its figures in semantic_manifest.json.

Data (foldgate.dev.guard_semantic_data): tool descriptions (the scan's split: generated attacks, real
catalogs, honest look-alikes, plus tests/data/guard/varied.jsonl's multilingual poisoning) and tool
results (varied.jsonl's injections in ordinary content, injections.jsonl, the demo fleet's real results
as negatives). Every group is bucketed by hash into train / val / eval; the hand-written files
handwritten_eval_*.jsonl, attacks_eval.jsonl and mcpproxy's security corpus are evaluation only.
Only gated passages (foldgate.guard.cues.is_gated) are learned from: the others are never scored.

Two logistic heads, fitted by full-batch Adam in numpy: ``cues`` (cue indicators) and ``vector`` (cue
indicators and the local search encoder's 384-d passage vector; skipped, and said, without the model).
Each head's threshold is the lowest at or over 0.5 that holds at most 0.04% of validation's real tools
and flags at most 5% of validation's benign results; the evaluation split is never tuned on.

    python tools/build_semantic_model.py [--corpora ../shared/corpora] [--no-vectors]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from foldgate.dev.guard_semantic_data import Sample, load_samples  # noqa: E402
from foldgate.guard.cues import CONJUNCTIONS, CUE_NAMES  # noqa: E402
from foldgate.guard.semantic import FORMAT, SEMANTIC_FILE  # noqa: E402

DATA = ROOT / "tests" / "data" / "guard"
OUT = ROOT / "shared" / "foldgate" / "guard" / "data"
CACHE = ROOT / ".cache" / "guard-vectors.npz"
SEED = 36
# The code whose change changes the model (its hash is recorded in the manifest with the data's).
CODE = (
    "tools/build_semantic_model.py",
    "tools/guard_varied.py",
    "shared/foldgate/guard/cues.py",
    "shared/foldgate/guard/semantic.py",
    "shared/foldgate/guard/features.py",
    "shared/foldgate/guard/poison_scan.py",
    "shared/foldgate/dev/guard_semantic_data.py",
)
STEPS = 600
LEARNING_RATE = 0.05
L2_CUES = 1e-4
L2_VECTOR = 1e-3
POSITIVE_SHARE = 0.35  # of the loss: a false hold or a false mark costs more than a miss here
FEATURES = (*CUE_NAMES, *(f"{a}&{b}" for a, b in CONJUNCTIONS))
MAX_TOOL_FP = 0.0004
MAX_RESULT_FP = 0.05


def cue_matrix(samples: list[Sample]) -> np.ndarray:
    index = {name: i for i, name in enumerate(FEATURES)}
    x = np.zeros((len(samples), len(FEATURES)), dtype=np.float32)
    for row, sample in enumerate(samples):
        for cue in sample.cues:
            if cue in index:
                x[row, index[cue]] = 1.0
    return x


def vectors(samples: list[Sample]) -> tuple[np.ndarray, str] | None:
    """Each sample's passage vector from the local search encoder (cached by text hash), or None."""
    from foldgate.search.embed import EmbeddingError, LocalEmbedder

    try:
        encoder = LocalEmbedder()
    except EmbeddingError as exc:
        print(f"no local encoder, vector head skipped: {exc}")
        return None
    cache: dict[str, np.ndarray] = {}
    if CACHE.is_file():
        with np.load(CACHE) as doc:
            if str(doc["model_id"]) == encoder.model_id:
                cache = dict(zip([str(k) for k in doc["keys"]], doc["vectors"], strict=True))
    out = np.zeros((len(samples), encoder.dim), dtype=np.float32)
    fresh = 0
    for row, sample in enumerate(samples):
        key = hashlib.sha256(sample.passage.encode("utf-8")).hexdigest()[:24]
        if key not in cache:
            cache[key] = encoder.encode(sample.passage)
            fresh += 1
        out[row] = cache[key]
    CACHE.parent.mkdir(exist_ok=True)
    np.savez(
        CACHE, model_id=encoder.model_id, keys=np.array(list(cache)), vectors=np.stack(list(cache.values()))
    )
    print(f"vectors: {len(samples)} passages, {fresh} embedded now")
    return out, encoder.model_id


def fit(x: np.ndarray, y: np.ndarray, l2: np.ndarray) -> tuple[np.ndarray, float]:
    """Logistic regression, class-weighted, L2 per column, full-batch Adam (deterministic)."""
    pos = max(1.0, float(y.sum()))
    neg = max(1.0, float(len(y) - y.sum()))
    weight = np.where(y > 0, POSITIVE_SHARE / pos, (1 - POSITIVE_SHARE) / neg).astype(np.float64)
    w = np.zeros(x.shape[1])
    b = 0.0
    m, v, mb, vb = np.zeros_like(w), np.zeros_like(w), 0.0, 0.0
    for step in range(1, STEPS + 1):
        p = 1.0 / (1.0 + np.exp(-(x @ w + b)))
        g = (p - y) * weight
        gw = x.T @ g + l2 * w
        gb = float(g.sum())
        m = 0.9 * m + 0.1 * gw
        v = 0.999 * v + 0.001 * gw * gw
        mb = 0.9 * mb + 0.1 * gb
        vb = 0.999 * vb + 0.001 * gb * gb
        c1, c2 = 1 - 0.9**step, 1 - 0.999**step
        w -= LEARNING_RATE * (m / c1) / (np.sqrt(v / c2) + 1e-8)
        b -= LEARNING_RATE * (mb / c1) / (np.sqrt(vb / c2) + 1e-8)
    return w, b


def item_scores(samples: list[Sample], z: np.ndarray) -> dict[str, tuple[int, str, str, float]]:
    """Per item (a tool or a result): label, kind, source and its highest passage probability."""
    out: dict[str, tuple[int, str, str, float]] = {}
    for sample, zi in zip(samples, z, strict=True):
        p = float(1.0 / (1.0 + np.exp(-zi)))
        prev = out.get(sample.item)
        if prev is None or p > prev[3]:
            out[sample.item] = (sample.label, sample.kind, sample.source, p)
    return out


def choose_threshold(
    scores: dict[str, tuple[int, str, str, float]], totals: dict[tuple[str, str, int], int], kind: str
) -> float:
    """The lowest threshold >= 0.5 within the false-positive budget of ``kind`` on validation: real
    tools for the scan, benign results of every source for the result guard."""
    if kind == "tool":
        honest = [
            p for label, k, src, p in scores.values() if label == 0 and k == "tool" and src == "catalog"
        ]
        count, budget = max(1, totals.get(("tool", "catalog", 0), 0)), MAX_TOOL_FP
    else:
        honest = [p for label, k, _, p in scores.values() if label == 0 and k == "result"]
        count = max(1, sum(n for (k, _, label), n in totals.items() if k == "result" and label == 0))
        budget = MAX_RESULT_FP
    for t in [0.5 + i * 0.005 for i in range(100)]:
        if sum(1 for p in honest if p >= t) / count <= budget:
            return round(t, 4)
    return 0.995


def figures(
    scores: dict[str, tuple[int, str, str, float]], totals: dict[tuple[str, str, int], int], t: float
) -> dict[str, Any]:
    """Recall and false positives by source, over every item (an item with no gated passage counts as
    not flagged: ``totals`` holds every item, gated or not)."""
    flagged: dict[tuple[str, str, int], int] = {}
    for label, kind, source, p in scores.values():
        if p >= t:
            flagged[(kind, source, label)] = flagged.get((kind, source, label), 0) + 1
    out: dict[str, Any] = {}
    for (kind, source, label), n in sorted(totals.items()):
        k = flagged.get((kind, source, label), 0)
        out[f"{kind}:{source}:{'attack' if label else 'honest'}"] = {
            "items": n,
            "flagged": k,
            "share": round(k / n, 4),
        }
    return out


def head_doc(w: np.ndarray, b: float, t: float, with_vector: bool) -> dict[str, Any]:
    n = len(FEATURES)
    doc: dict[str, Any] = {
        "cues": {name: round(float(w[i]), 4) for i, name in enumerate(FEATURES) if abs(w[i]) >= 1e-3},
        "bias": round(float(b), 4),
        "threshold": t,
    }
    if with_vector:
        doc["vector"] = [round(float(v), 4) for v in w[n:]]
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", default=str(ROOT.parent / "shared" / "corpora"))
    parser.add_argument("--no-vectors", action="store_true", help="train the cue head only")
    args = parser.parse_args()
    corpora = Path(args.corpora)
    if not corpora.is_dir():
        print(f"no corpora at {corpora}: the shipped semantic model is kept")
        return 0
    started = time.perf_counter()
    samples, totals = load_samples(corpora, DATA)
    by_split = {s: [x for x in samples if x.split == s] for s in ("train", "val", "eval")}
    print({s: len(v) for s, v in by_split.items()})
    x_cues = cue_matrix(samples)
    y = np.array([s.label for s in samples], dtype=np.float64)
    vec = None if args.no_vectors else vectors(samples)
    train = np.array([s.split == "train" for s in samples])
    model: dict[str, Any] = {"format": FORMAT}
    manifest: dict[str, Any] = {"model": SEMANTIC_FILE, "seed": SEED, "features": list(FEATURES), "heads": {}}
    heads: list[tuple[str, np.ndarray, np.ndarray]] = [("cues", x_cues, np.full(x_cues.shape[1], L2_CUES))]
    if vec is not None:
        x_vec = np.hstack([x_cues, vec[0]])
        l2 = np.concatenate([np.full(x_cues.shape[1], L2_CUES), np.full(vec[0].shape[1], L2_VECTOR)])
        heads.append(("vector", x_vec, l2))
        model["encoder_id"] = vec[1]
    for name, x, l2 in heads:
        w, b = fit(x[train], y[train], l2)
        z = x @ w + b
        per_split = {
            s: [i for i, smp in enumerate(samples) if smp.split == s] for s in ("val", "eval", "train")
        }
        val_scores = item_scores([samples[i] for i in per_split["val"]], z[per_split["val"]])
        t = choose_threshold(val_scores, totals["val"], "tool")
        t_result = choose_threshold(val_scores, totals["val"], "result")
        model[name] = head_doc(w, b, t, name == "vector")
        model[name]["result_threshold"] = t_result
        bad = sorted((p, i) for i, (label, k, src, p) in val_scores.items() if not label and src == "catalog")
        print(name, "val catalog highest:", [(round(p, 3), i) for p, i in bad[-6:]])
        manifest["heads"][name] = {"threshold": t, "result_threshold": t_result}
        for s_name, idx in per_split.items():
            scores = item_scores([samples[i] for i in idx], z[idx])
            tools = {k: v for k, v in scores.items() if v[1] == "tool"}
            results = {k: v for k, v in scores.items() if v[1] == "result"}
            manifest["heads"][name][s_name] = {
                **figures(tools, {k: n for k, n in totals[s_name].items() if k[0] == "tool"}, t),
                **figures(results, {k: n for k, n in totals[s_name].items() if k[0] == "result"}, t_result),
            }
    OUT.mkdir(parents=True, exist_ok=True)
    body = json.dumps(model, separators=(",", ":")).encode("utf-8")
    (OUT / SEMANTIC_FILE).write_bytes(body)
    manifest["inputs"] = {
        str(path.relative_to(ROOT)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in [*(ROOT / c for c in CODE), *sorted(DATA.glob("*.jsonl"))]
        if path.is_file()
    }
    manifest["model_bytes"] = len(body)
    manifest["model_sha256"] = hashlib.sha256(body).hexdigest()
    manifest["seconds"] = round(time.perf_counter() - started, 1)
    (OUT / "semantic_manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    for head, figs in manifest["heads"].items():
        print(head, "threshold", figs["threshold"], "results", figs["result_threshold"])
        for split in ("val", "eval"):
            for key, f in figs[split].items():
                print(f"  {split} {key}: {f['flagged']}/{f['items']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
