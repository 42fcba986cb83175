"""Train the learned injection scorer (make guard-model) and write it into the package with its manifest.

The data and its split are foldgate.dev.guard_data's (the same split `foldgate bench scan` reports
on): generated attacks and honest look-alikes split by template group, real honest tools by server,
hand-written attacks for validation and for evaluation, mcpproxy's security corpus for evaluation only.
The decision threshold is chosen for precision without the evaluation split: the lowest at or over 0.5
that flags at most 0.1% of validation's honest tools and none of training's. The evaluation split is
never tuned on.

Model: logistic regression (honest texts weighted up, L2) over the features of foldgate.guard.features,
fitted by full-batch Adam in numpy (no scikit-learn or scipy needed), weights pruned and rounded so the
file stays small. Idempotent: nothing runs when the shipped manifest's input hashes match the inputs (--force
retrains); without ../shared/corpora it says so and keeps the shipped model.

    python tools/build_guard_model.py [--corpora ../shared/corpora] [--force]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "shared"))

from foldgate.dev.guard_data import CATALOGS, DATA_FILES, SECURITY, Item, Split, load_split  # noqa: E402
from foldgate.guard.features import PASSAGE_CHARS, text_features  # noqa: E402
from foldgate.guard.linear import FORMAT, LinearScorer  # noqa: E402
from foldgate.guard.scorer import MANIFEST_FILE, MODEL_FILE  # noqa: E402

DATA = ROOT / "tests" / "data" / "guard"
OUT = ROOT / "shared" / "foldgate" / "guard" / "data"
CODE = (
    "tools/build_guard_model.py",
    "shared/foldgate/guard/features.py",
    "shared/foldgate/guard/fields.py",
    "shared/foldgate/dev/guard_data.py",
    "shared/foldgate/guard/linear.py",
    "shared/foldgate/guard/poison_text.py",
)
SEED = 27
MIN_DF = 2
L2_WORDS = 1e-3  # words, pairs and characters: many, and specific to the texts they came from
L2_CUES = 1e-5  # the hand-made cues: few and general, let them carry weight
POSITIVE_SHARE = 0.2  # of the loss: honest texts weigh more, a false hold costs the operator
COVERED = 1  # training copies of each generated payload appended to a real honest description
STEPS = 400
LEARNING_RATE = 0.05
PRUNE = 0.02  # weights smaller than this are left out of the file (their sum moves no verdict)
DECIMALS = 3
VAL_FP_TARGET = 0.0  # validation honest tools flagged, at most
TRAIN_FP_TARGET = 0.0  # training honest tools flagged, at most: the real catalogs' tail is in them too


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def inputs(corpora: Path) -> dict[str, dict[str, Any]]:
    """Every input file with its hash and size: the manifest's key for "nothing to do"."""
    files = {f"corpora/{a}/{b}": corpora / a / b for a, b in (*CATALOGS, SECURITY)}
    files |= {f"tests/data/guard/{name}": DATA / name for name in DATA_FILES}
    files |= {rel: ROOT / rel for rel in CODE}
    return {name: {"sha256": sha256(p), "bytes": p.stat().st_size} for name, p in files.items()}


def with_covers(split: Split, data: Path) -> list[Item]:
    """The training items, and the payload of each generated training attack again inside a real honest
    description of the training split, so the words of a cover are learnt as the honest words they are
    (corpora text is combined here, never written into the repository)."""
    rng = random.Random(SEED)
    train = split.items["train"]
    covers = [item.texts[0] for item in train if item.label == 0 and item.source not in ("benign-hard",)]
    attacks = {row["id"]: row for row in read_jsonl(data / "attacks.jsonl")}
    extra = [
        Item({"name": "tool", "description": f"{rng.choice(covers)} {attacks[item.ident]['payload']}"}, 1,
             "generated-covered", item.ident)
        for item in train
        if item.source == "generated"
        for _ in range(COVERED)
    ]  # fmt: skip
    return train + extra


def training_rows(items: Iterable[Item]) -> tuple[list[set[str]], list[int]]:
    rows: list[set[str]] = []
    labels: list[int] = []
    seen: set[tuple[frozenset[str], int]] = set()
    for item in items:
        label = item.label
        for text in item.texts:
            for feats in text_features(text):
                key = (frozenset(feats), label)
                if feats and key not in seen:  # repeated boilerplate would weigh as many examples
                    seen.add(key)
                    rows.append(feats)
                    labels.append(label)
    return rows, labels


def fit(rows: list[set[str]], labels: list[int]) -> tuple[dict[str, float], float]:
    df = Counter(f for feats in rows for f in feats)
    vocab = sorted(f for f, n in df.items() if n >= MIN_DF)
    index = {f: i for i, f in enumerate(vocab)}
    cols_l: list[int] = []
    ptr = [0]
    for feats in rows:
        cols_l.extend(index[f] for f in feats if f in index)
        ptr.append(len(cols_l))
    cols = np.asarray(cols_l, dtype=np.int64)
    row_of = np.repeat(np.arange(len(rows)), np.diff(np.asarray(ptr)))
    y = np.asarray(labels, dtype=np.float64)
    pos = y.sum()
    sample_w = np.where(y == 1, POSITIVE_SHARE / pos, (1 - POSITIVE_SHARE) / (len(y) - pos))
    n_feat = len(vocab)
    l2 = np.asarray([L2_CUES if f.startswith("cue:") else L2_WORDS for f in vocab])
    w = np.zeros(n_feat)
    bias = 0.0
    m, v = np.zeros(n_feat + 1), np.zeros(n_feat + 1)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, STEPS + 1):
        z = bias + np.bincount(row_of, weights=w[cols], minlength=len(rows))
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -60, 60)))
        g_row = (p - y) * sample_w
        grad = np.empty(n_feat + 1)
        grad[:n_feat] = np.bincount(cols, weights=g_row[row_of], minlength=n_feat) + l2 * w
        grad[n_feat] = g_row.sum()
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        update = LEARNING_RATE * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps)
        w -= update[:n_feat]
        bias -= float(update[n_feat])
        if step % 100 == 0:
            loss = -float(np.sum(sample_w * (y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))))
            print(f"  step {step}: loss {loss:.4f}", flush=True)
    weights = {f: round(float(x), DECIMALS) for f, x in zip(vocab, w, strict=True) if abs(x) >= PRUNE}
    return weights, round(bias, DECIMALS)


def tool_scores(scorer: LinearScorer, items: list[Item]) -> list[float]:
    return [max(scorer.score(t).probability for t in item.texts) for item in items]


def lowest_threshold(scores: list[float], labels: list[int], target: float) -> float:
    """The lowest threshold (at least 0.5) that flags at most ``target`` of the honest tools scored."""
    negatives = sorted((s for s, y in zip(scores, labels, strict=True) if y == 0), reverse=True)
    allowed = math.floor(target * len(negatives))
    threshold = 0.5
    if len(negatives) > allowed:
        threshold = max(threshold, negatives[allowed] + 1e-4)
    return round(min(threshold, 0.999), 4)


def choose_threshold(scorer: LinearScorer, split: Split) -> float:
    """The lowest threshold meeting both targets: validation's honest tools (unseen servers) and the
    training split's (seen, but where most of the real catalogs' long tail of odd honest texts is)."""
    honest_train = [item for item in split.items["train"] if item.label == 0]
    val = split.items["val"]
    return max(
        lowest_threshold(tool_scores(scorer, val), [item.label for item in val], VAL_FP_TARGET),
        lowest_threshold(tool_scores(scorer, honest_train), [0] * len(honest_train), TRAIN_FP_TARGET),
    )


def figures(scores: list[float], items: list[Item], threshold: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    by_source: dict[str, list[tuple[bool, int]]] = {}
    for s, item in zip(scores, items, strict=True):
        by_source.setdefault(item.source, []).append((s >= threshold, item.label))
    for source, pairs in sorted(by_source.items()):
        pos = [f for f, y in pairs if y == 1]
        neg = [f for f, y in pairs if y == 0]
        entry: dict[str, Any] = {}
        if pos:
            entry["attacks"] = len(pos)
            entry["recall"] = round(sum(pos) / len(pos), 4)
        if neg:
            entry["honest"] = len(neg)
            entry["flagged"] = sum(neg)
        out[source] = entry
    flags = [(s >= threshold, item.label) for s, item in zip(scores, items, strict=True)]
    tp = sum(1 for f, y in flags if f and y == 1)
    fp = sum(1 for f, y in flags if f and y == 0)
    pos = sum(1 for _, y in flags if y == 1)
    neg = len(flags) - pos
    out["all"] = {
        "attacks": pos,
        "honest": neg,
        "recall": round(tp / pos, 4) if pos else None,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "false_positive_rate": round(fp / neg, 5) if neg else None,
    }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--force", action="store_true", help="retrain even when the manifest matches")
    args = parser.parse_args()
    if not (args.corpora / SECURITY[0] / SECURITY[1]).is_file():
        print(f"guard-model: {args.corpora} is absent; the shipped model is kept")
        return 0
    ins = inputs(args.corpora)
    manifest_path = args.out / MANIFEST_FILE
    if not args.force and manifest_path.is_file() and (args.out / MODEL_FILE).is_file():
        shipped = json.loads(manifest_path.read_text(encoding="utf-8"))
        if shipped.get("inputs") == ins:
            print("guard-model: up to date (the manifest matches its inputs)")
            return 0
    started = time.monotonic()
    data = load_split(args.corpora, DATA)
    for split, items in data.items.items():
        attacks = sum(item.label for item in items)
        print(f"{split}: {attacks} attacks, {len(items) - attacks} honest tools")
    rows, labels = training_rows(with_covers(data, DATA))
    print(f"training on {len(rows)} passages ({sum(labels)} attack)", flush=True)
    weights, bias = fit(rows, labels)
    scorer = LinearScorer(weights, bias, 0.5)
    val = data.items["val"]
    threshold = choose_threshold(scorer, data)
    scorer = LinearScorer(weights, bias, threshold)
    validation = figures(tool_scores(scorer, val), val, threshold)
    evaluation = figures(tool_scores(scorer, data.items["eval"]), data.items["eval"], threshold)
    model = {"format": FORMAT, "bias": bias, "threshold": threshold, "weights": dict(sorted(weights.items()))}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / MODEL_FILE).write_text(json.dumps(model, ensure_ascii=False, separators=(",", ":")) + "\n")
    manifest = {
        "model": MODEL_FILE,
        "model_sha256": sha256(args.out / MODEL_FILE),
        "model_bytes": (args.out / MODEL_FILE).stat().st_size,
        "seed": SEED,
        "features": {
            "words": "<word> (\\w+ on normalised text)",
            "bigrams": "<word> <word>",
            "chars": "c:<3 chars> of non-ASCII text",
            "cues": "cue:<name>, foldgate.guard.features.CUES and cue:secret_object",
            "passage_chars": PASSAGE_CHARS,
            "min_df": MIN_DF,
        },
        "training": {
            "l2_words": L2_WORDS,
            "l2_cues": L2_CUES,
            "covered": COVERED,
            "steps": STEPS,
            "learning_rate": LEARNING_RATE,
            "prune": PRUNE,
            "passages": len(rows),
            "attack_passages": sum(labels),
            "weights": len(weights),
        },
        "split": "honest tools by server group, generated attacks by template group: sha256 % 100 -> "
        "train < 50 <= val < 80 <= eval; hand-written attacks and mcpproxy's security corpus: eval only",
        "threshold": threshold,
        "threshold_rule": f"lowest >= 0.5 flagging at most {VAL_FP_TARGET:.2%} of validation honest "
        f"tools and {TRAIN_FP_TARGET:.2%} of training honest tools",
        "validation": validation,
        "evaluation": evaluation,
        "inputs": ins,
    }
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    print(
        json.dumps(
            {"threshold": threshold, "validation": validation["all"], "evaluation": evaluation}, indent=1
        )
    )
    seconds = time.monotonic() - started
    print(f"guard-model: {len(weights)} weights, {manifest['model_bytes']} bytes, {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
