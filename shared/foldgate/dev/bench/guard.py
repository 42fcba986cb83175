"""``foldgate bench guard``: what the result guard catches and what it costs.

- **secrets recall**, overall and per family, on three sets: the planted credentials the rules were
  tuned on (``tests/data/guard/planted.jsonl``: fake but format-valid credentials of every family,
  inside realistic results); an evaluation split drawn from the same makers with seeds never used in
  tuning; and a hand-written set kept apart from tuning (``secrets_handwritten.jsonl``: realistic
  results in many formats, written by hand, with look-alikes that must stay: its false redactions);
- **false redactions**: findings on the recorded real results of the demo fleet's servers
  (``tests/data/guard/fleet_results.jsonl``: server-everything, filesystem, memory, git, time,
  recorded by ``tools/record_guard_fleet.py``), which hold no credential at all;
- **real tool texts**: secret findings on every tool entry of the shared corpora (``../shared/corpora``,
  when the team kit is beside the checkout);
- **injection**: the planted injections in realistic results that are marked, and the benign
  look-alikes that are (``tests/data/guard/injections.jsonl``), plus marks on the fleet's results;
- **latency**: the whole guard (redaction, prefilter, rules, marking) on a CallToolResult of 1, 10
  and 100 KB of the fleet's real text and of a JSON record listing, p50 and p95 and per KB.

Timings are this thread's CPU time in the guard alone (it does no I/O), as ``foldgate bench scan``
measures: on a machine shared with other work, wall time would count the time others ran.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

from foldgate.guard.injection import find_injections
from foldgate.guard.result import (
    GuardPolicy,
    TextGuard,
    guard_call_result,
    guard_prompt_result,
    guard_read_result,
)
from foldgate.guard.scorer import load_scorer
from foldgate.guard.secrets import redact_secrets

__all__ = ["DATA", "format_guard_report", "run_guard_bench"]

DATA: Final = Path(__file__).resolve().parents[4] / "tests" / "data" / "guard"
# The team kit beside the checkout (absent elsewhere: that figure is then left out).
CORPORA: Final = Path(__file__).resolve().parents[5] / "shared" / "corpora"
_GUARDS: Final = {
    "tools/call": guard_call_result,
    "resources/read": guard_read_result,
    "prompts/get": guard_prompt_result,
}
_SIZES_KB: Final = (1, 10, 100)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _secrets(planted: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall per family (``family``, or ``kind`` in the generated sets) and false redactions on the
    look-alikes (rows whose ``secret`` is None)."""
    per_family: dict[str, list[int]] = {}
    false = 0
    for row in planted:
        redacted, counts = redact_secrets(row["text"])
        if row["secret"] is None:
            false += sum(counts.values())
            continue
        tally = per_family.setdefault(row.get("family") or row["kind"], [0, 0])
        tally[0] += int(row["secret"] not in redacted and bool(counts))
        tally[1] += 1
    caught = sum(c for c, _ in per_family.values())
    total = sum(n for _, n in per_family.values())
    return {
        "planted": total,
        "kinds": len(per_family),
        "caught": caught,
        "recall": round(caught / total, 4) if total else None,
        "per_family": {k: f"{c}/{n}" for k, (c, n) in sorted(per_family.items())},
        "missed_kinds": sorted(k for k, (c, n) in per_family.items() if c < n),
        "look_alikes": sum(1 for r in planted if r["secret"] is None),
        "false_redactions": false,
    }


def _fleet(fleet: list[dict[str, Any]]) -> dict[str, Any]:
    rules: Counter[str] = Counter()
    touched = []
    for row in fleet:
        guard = TextGuard(GuardPolicy(), f"the tool {row['server']}__{row['name']}", load_scorer())
        if _GUARDS[row["method"]](row["result"], guard) is not row["result"]:
            touched.append(f"{row['server']}.{row['name']}")
        rules.update(guard.counts)
    secret_rules = {k: v for k, v in rules.items() if "-" not in k}
    return {
        "results": len(fleet),
        "servers": sorted({r["server"] for r in fleet}),
        "chars": sum(len(json.dumps(r["result"])) for r in fleet),
        "false_redactions": sum(secret_rules.values()),
        "false_marks": sum(v for k, v in rules.items() if k not in secret_rules),
        "touched": touched,
    }


def _corpora(folder: Path) -> dict[str, Any] | None:
    """Secret findings on every real tool entry (as JSON text) of the shared corpora, None without them:
    a second set of real texts with no credential meant in them."""
    files = sorted(folder.glob("*/tools.jsonl"))
    if not files:
        return None
    entries, found = 0, []
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            entries += 1
            kinds = redact_secrets(json.dumps(row, ensure_ascii=False))[1]
            if kinds:
                found.append({"corpus": path.parent.name, "tool": str(row.get("name")), "kinds": kinds})
    return {"entries": entries, "with_findings": len(found), "findings": found}


def _injection(rows: list[dict[str, Any]]) -> dict[str, Any]:
    scorer = load_scorer()
    attacks = [r for r in rows if r["injected"]]
    benign = [r for r in rows if not r["injected"]]
    marked = [r for r in attacks if find_injections(r["text"], scorer)]
    false = [r for r in benign if find_injections(r["text"], scorer)]
    return {
        "scorer": scorer is not None,
        "attacks": len(attacks),
        "marked": len(marked),
        "recall": round(len(marked) / len(attacks), 4) if attacks else None,
        "missed": [r["style"] for r in attacks if r not in marked],
        "benign": len(benign),
        "false_marks": len(false),
        "falsely_marked": [r["style"] for r in false],
    }


def _texts(fleet: list[dict[str, Any]]) -> str:
    parts = []
    for row in fleet:
        for item in row["result"].get("content") or row["result"].get("contents") or []:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
    return "\n".join(parts)


def _records(size: int) -> str:
    rows = [
        {"id": i, "name": f"invoice-{i:05d}.pdf", "size": 1000 + i * 37, "sha": f"{i * 2654435761:040x}",
         "modified": "2026-11-30T12:00:00Z", "owner": "ada@example.com", "tags": ["finance", "q4"]}
        for i in range(size // 100 + 1)
    ]  # fmt: skip
    return json.dumps(rows)[:size]


def _cued(size: int) -> str:
    """A result dense in what opens the secret detectors (secret-named keys, URLs, token-like
    prefixes) holding no credential: the cost of a result with cues."""
    lines = (
        "token_type=bearer\nmax_tokens=4096\npassword: ${DB_PASSWORD}\n"
        '{"api_key_id": "ak_3f9c2e1d", "next_page_token": "CiAKGjBpNDd2", "secret_ref": "vault:kv/app"}\n'
        "DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@db:5432/app see https://example.com/a?b=c\n"
        "Authorization: Bearer <token>; sk-learn-docs; AIza (docs); xoxb-...; define('WP_DEBUG', false);\n"
    )
    return (lines * (size // len(lines) + 1))[:size]


def _latency(text: str, repeats: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kb in _SIZES_KB:
        body = text[: kb * 1024]
        result = {"content": [{"type": "text", "text": body}], "isError": False}
        runs = max(20, repeats // kb)
        times = []
        for _ in range(runs):
            guard = TextGuard(GuardPolicy(), "the tool bench__result", load_scorer())
            started = time.thread_time()
            guard_call_result(result, guard)
            times.append((time.thread_time() - started) * 1000)
        times.sort()
        p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
        out[f"{kb}KB"] = {
            "runs": runs,
            "p50_ms": round(statistics.median(times), 4),
            "p95_ms": round(p95, 4),
            "us_per_kb_p50": round(statistics.median(times) * 1000 / kb, 2),
        }
    return out


def run_guard_bench(data: Path = DATA, *, repeats: int = 400, corpora: Path = CORPORA) -> dict[str, Any]:
    """Every figure of the module doc, from the files in ``data`` (and ``corpora`` when present)."""
    fleet = _rows(data / "fleet_results.jsonl")
    text = _texts(fleet)
    while len(text) < max(_SIZES_KB) * 1024:
        text += "\n" + text
    # Imported here: the credential makers are needed by this bench only.
    from foldgate.dev.guard_samples import planted_results

    handwritten = data / "secrets_handwritten.jsonl"
    return {
        "secrets": _secrets(_rows(data / "planted.jsonl")),
        "secrets_eval": _secrets(planted_results(per_kind=5, seed=36036)),
        "secrets_handwritten": _secrets(_rows(handwritten)) if handwritten.exists() else None,
        "fleet": _fleet(fleet),
        "corpora": _corpora(corpora),
        "injection": _injection(_rows(data / "injections.jsonl")),
        "latency": {
            "fleet_text": _latency(text, repeats),
            "json_records": _latency(_records(max(_SIZES_KB) * 1024), repeats),
            "secret_cues": _latency(_cued(max(_SIZES_KB) * 1024), repeats),
        },
    }


def format_guard_report(report: dict[str, Any]) -> str:
    """The report as text."""
    f, i = report["fleet"], report["injection"]
    lines = []
    for label, key in (("tuning set", "secrets"), ("evaluation split", "secrets_eval"),
                       ("hand-written set", "secrets_handwritten")):  # fmt: skip
        s = report.get(key)
        if s is None:
            continue
        lines.append(
            f"secrets recall ({label}): {s['caught']}/{s['planted']} planted credentials of {s['kinds']} "
            f"families ({s['recall']:.2%}); missed: {', '.join(s['missed_kinds']) or 'none'}"
            + (
                f"; {s['false_redactions']} false redactions on {s['look_alikes']} look-alikes"
                if s["look_alikes"]
                else ""
            )
        )
        lines.append("  per family: " + ", ".join(f"{k} {v}" for k, v in s["per_family"].items()))
    lines += [
        f"demo fleet ({', '.join(f['servers'])}): {f['results']} real results, {f['chars']:,} characters: "
        f"{f['false_redactions']} false redactions, {f['false_marks']} marks"
        + (f" ({', '.join(f['touched'])})" if f["touched"] else ""),
        *(
            [
                f"real tool entries of the shared corpora: {c['with_findings']} of {c['entries']:,} "
                "with a secret finding: "
                + "; ".join(f"{x['corpus']}/{x['tool']} {x['kinds']}" for x in c["findings"][:5])
            ]
            if (c := report["corpora"]) is not None
            else []
        ),
        f"injection: {i['marked']}/{i['attacks']} planted injections marked ({i['recall']:.2%}), "
        f"{i['false_marks']}/{i['benign']} benign look-alikes marked; scorer "
        f"{'loaded' if i['scorer'] else 'not shipped (rules only)'}"
        + (f"; missed: {', '.join(i['missed'])}" if i["missed"] else ""),
        "latency of the whole guard on a CallToolResult (ms):",
    ]
    for name, sizes in report["latency"].items():
        cells = ", ".join(
            f"{kb} p50 {v['p50_ms']:.3f} p95 {v['p95_ms']:.3f} ({v['us_per_kb_p50']:.1f} us/KB)"
            for kb, v in sizes.items()
        )
        lines.append(f"  {name}: {cells}")
    return "\n".join(lines)
