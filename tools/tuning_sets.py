"""Generate the search tuning sets that resemble real use: multi-intent requests and a cross-catalog haystack.

Two sets, built only from tuning data (never from ``../shared/holdout``):

- **multi-intent**: 2-3 single-tool MCPToolBench++ queries for *different* tools joined with natural
  connectives ("..., and then ...", "First ... Next ... Finally ..."); labels = the parts' tools. Real
  agent tasks name several needs at once; a single-need query set cannot measure that.
- **cross-catalog**: MCPToolBench++'s 87 tools dropped into the 11,363-tool MCP-Flow catalog (with its
  near-duplicate servers from several marketplaces), queried by a sample of the single queries and by
  the multi-intent set: the tuning queries against a big, noisy, real haystack.

The corpora carry no licence, so the repository keeps only *references*: ``tests/data/tuning/*.jsonl``
name source query ids, connective templates and expected tool ids, never query text. ``materialise``
resolves them against ``../shared/corpora`` into ``.tuning/`` (git-ignored) as ordinary
``{"query", "expected"}`` files and a merged ``tools.jsonl`` that ``foldgate bench search`` reads::

    python tools/tuning_sets.py generate --corpora ../shared/corpora --out tests/data/tuning
    python tools/tuning_sets.py materialise --corpora ../shared/corpora --refs tests/data/tuning --out .tuning

Generation is deterministic (a fixed seed over the sorted source rows): re-running it reproduces the
committed files byte for byte, which a test checks.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SEED = 17
MULTI_TWO = 150
MULTI_THREE = 100
CROSS_SINGLE = 300
# Share of multi-intent rows whose parts come from different MCPToolBench++ categories (a browser step
# with a search step, ...): real tasks mostly cross servers, some chain tools of one server.
CROSS_CATEGORY_SHARE = 0.75

# Connective templates, "{0}", "{1}", "{2}" = the parts. A part after a mid-sentence connective is
# lower-cased at its first letter; one after a sentence break keeps its capital.
TWO_PART = (
    "{0}, and then {1}",
    "{0}. After that, {1}",
    "{0}; also {1}",
    "First {0}, then {1}",
    "{0} and {1}",
    "{0}. Then {1}",
    "{0}, plus {1}",
    "{0}. I also need you to {1}",
    "{0}, after which {1}",
    "{0}. Once that is done, {1}",
)
THREE_PART = (
    "{0}, {1}, and then {2}",
    "First {0}. Next, {1}. Finally, {2}",
    "{0}; {1}; and {2}",
    "{0}, then {1}, and finally {2}",
    "{0}. Also {1}, and {2}",
    "{0}. After that {1}. Then {2}",
)
MCPTOOLBENCH_TOOLS = "mcptoolbench-pp/tools.jsonl"
MCPTOOLBENCH_QUERIES = "mcptoolbench-pp/queries.jsonl"
MCPFLOW_TOOLS = "mcp-flow/tools.jsonl"
# Two tools are copies of one another when name and the start of the description agree.
_CLONE_PREFIX = 80


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Objects of a JSON-lines file (blank lines skipped)."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write rows as compact, key-sorted JSON lines; returns how many."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
            count += 1
    return count


def _pick_parts(
    rng: random.Random, rows: Sequence[dict[str, Any]], size: int, cross_category: bool
) -> list[dict[str, Any]]:
    """``size`` source rows with pairwise different expected tools (and categories when asked)."""
    while True:
        chosen = rng.sample(list(rows), size)
        tools = {r["expected"][0] for r in chosen}
        cats = {r["category"] for r in chosen}
        if len(tools) != size:
            continue
        if cross_category and len(cats) != size:
            continue
        if not cross_category and len(cats) != 1:
            continue
        return chosen


def generate_multi_intent(queries: Sequence[dict[str, Any]], seed: int = SEED) -> list[dict[str, Any]]:
    """Reference rows ``{id, parts, template, expected}`` of the multi-intent set."""
    rng = random.Random(seed)
    # Only single-tool queries from categories with more than one tool can be joined meaningfully.
    rows = sorted((q for q in queries if len(q.get("expected", [])) == 1), key=lambda q: q["id"])
    out: list[dict[str, Any]] = []
    for size, count, templates in ((2, MULTI_TWO, TWO_PART), (3, MULTI_THREE, THREE_PART)):
        for i in range(count):
            cross = rng.random() < CROSS_CATEGORY_SHARE
            parts = _pick_parts(rng, rows, size, cross)
            out.append(
                {
                    "id": f"mi{size}-{i:03d}",
                    "parts": [p["id"] for p in parts],
                    "template": rng.choice(templates),
                    "expected": [p["expected"][0] for p in parts],
                }
            )
    return out


def generate_cross_catalog(queries: Sequence[dict[str, Any]], seed: int = SEED) -> list[dict[str, Any]]:
    """Reference rows ``{id, parts, expected}`` of the single-query sample used on the big catalog."""
    rng = random.Random(seed + 1)
    rows = sorted(queries, key=lambda q: q["id"])
    sample = sorted(rng.sample(rows, min(CROSS_SINGLE, len(rows))), key=lambda q: q["id"])
    return [{"id": f"cc-{q['id']}", "parts": [q["id"]], "expected": list(q["expected"])} for q in sample]


def _clause(text: str) -> str:
    """A query as a clause: no surrounding space, no final full stop (a question mark stays)."""
    text = " ".join(text.split())
    return text[:-1].rstrip() if text.endswith(".") else text


def _lower_first(text: str) -> str:
    # Keep acronyms and "I" ("SQL ...", "I want ..."): only a capital followed by a lower-case letter.
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


def render(template: str, parts: Sequence[str]) -> str:
    """Join clauses with a connective template; capitalisation follows the position in the sentence."""
    clauses = [_clause(p) for p in parts]
    pieces = template.split("{")
    out = pieces[0]
    for piece in pieces[1:]:
        index_text, rest = piece.split("}", 1)
        clause = clauses[int(index_text)]
        before = out.rstrip()
        sentence_start = not before or before.endswith((".", "?", "!"))
        if clause.endswith("?") and rest[:1] in (",", ";", "."):
            # A question ends its sentence: "What is X? And then ...", never "What is X?, and then".
            rest = rest[1:].lstrip()
            rest = " " + rest[:1].upper() + rest[1:]
        out += (clause if sentence_start else _lower_first(clause)) + rest
    return out if out.endswith(("?", "!")) else out + "."


def materialise(refs: Sequence[dict[str, Any]], queries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Resolve reference rows against the source queries into ``{id, query, expected}`` rows."""
    by_id = {q["id"]: q for q in queries}
    out: list[dict[str, Any]] = []
    for ref in refs:
        texts = [str(by_id[pid]["query"]) for pid in ref["parts"]]
        text = render(ref["template"], texts) if "template" in ref else texts[0]
        out.append({"id": ref["id"], "query": text, "expected": list(ref["expected"])})
    return out


def _clone_key(tool: dict[str, Any]) -> tuple[str, str]:
    return str(tool.get("name")), " ".join(str(tool.get("description") or "").split())[:_CLONE_PREFIX]


def without_clones(
    haystack: Sequence[dict[str, Any]], labelled: Sequence[dict[str, Any]]
) -> tuple[list[dict[str, Any]], int]:
    """``haystack`` minus exact copies of a labelled tool (same name, same description start).

    MCP-Flow re-lists some MCPToolBench++ servers (filesystem, tavily, maps) from other marketplaces: a
    copy is as right an answer as the labelled tool, but the labels would count it wrong. Similar tools
    with other names or descriptions stay: they are the realistic competition.
    """
    keys = {_clone_key(t) for t in labelled}
    kept = [t for t in haystack if _clone_key(t) not in keys]
    return kept, len(haystack) - len(kept)


def _cmd_generate(args: argparse.Namespace) -> int:
    corpora = Path(args.corpora)
    queries = read_jsonl(corpora / MCPTOOLBENCH_QUERIES)
    out = Path(args.out)
    n_multi = write_jsonl(out / "multi_intent.jsonl", generate_multi_intent(queries))
    n_cross = write_jsonl(out / "cross_catalog.jsonl", generate_cross_catalog(queries))
    print(f"wrote {n_multi} multi-intent and {n_cross} cross-catalog reference rows to {out}")
    return 0


def _cmd_materialise(args: argparse.Namespace) -> int:
    corpora, refs_dir, out = Path(args.corpora), Path(args.refs), Path(args.out)
    queries = read_jsonl(corpora / MCPTOOLBENCH_QUERIES)
    multi = materialise(read_jsonl(refs_dir / "multi_intent.jsonl"), queries)
    single = materialise(read_jsonl(refs_dir / "cross_catalog.jsonl"), queries)
    write_jsonl(out / "multi_intent.queries.jsonl", multi)
    write_jsonl(out / "cross_catalog.queries.jsonl", single)
    write_jsonl(out / "cross_catalog_multi.queries.jsonl", multi)
    labelled = read_jsonl(corpora / MCPTOOLBENCH_TOOLS)
    haystack, dropped = without_clones(read_jsonl(corpora / MCPFLOW_TOOLS), labelled)
    # The haystack: MCP-Flow's catalog with the labelled tools present (their server names do not clash).
    tools = haystack + labelled
    write_jsonl(out / "cross_catalog.tools.jsonl", tools)
    print(
        f"materialised {len(multi)} multi-intent, {len(single)} cross-catalog queries, {len(tools)} tools "
        f"({dropped} exact clones of labelled tools left out)"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``generate`` the reference files or ``materialise`` them into query files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="cmd", required=True)
    gen = sub.add_parser("generate", help="write the reference files (ids and templates only)")
    gen.add_argument("--corpora", default="../shared/corpora")
    gen.add_argument("--out", default="tests/data/tuning")
    gen.set_defaults(func=_cmd_generate)
    mat = sub.add_parser("materialise", help="resolve the references into query and tool files")
    mat.add_argument("--corpora", default="../shared/corpora")
    mat.add_argument("--refs", default="tests/data/tuning")
    mat.add_argument("--out", default=".tuning")
    mat.set_defaults(func=_cmd_materialise)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
