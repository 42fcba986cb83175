"""Tool-poisoning scan at index time: a pure, fast check of everything a tool publishes to the model.

An upstream's ``tools/list`` reaches the model as text, so an upstream can write instructions there:
read ``~/.ssh/id_rsa`` first, BCC every email to an outside address, ignore previous instructions, and
hide all that in tags, invisible Unicode or look-alike letters. :func:`scan_tool` reads every string a
tool publishes (name, title, description, annotation title, every ``description``/``title``/enum/
string default in the input and output schemas, every string in ``_meta``) and returns the rules it
matched (:class:`Finding`: rule id, field path, short excerpt). No model, no network: regexes compiled
once (:mod:`foldgate.guard.poison_rules`), so an 11k-tool catalog scans in a few seconds.

Rules: ``hidden-instructions``, ``concealment``, ``instruction-override``, ``forced-precondition``,
``sensitive-file``, ``secret-harvest``, ``exfiltration``, ``tool-shadowing``, ``rug-pull``,
``command-injection``, ``active-markup``, ``capability-claim`` (phrase families); ``invisible-unicode``,
``mixed-script``, ``encoded-blob`` (characters); ``title-mismatch`` (a title whose subject shares nothing
with the tool's name and description); ``learned-injection`` (a description the rules passed and the
shipped injection model flags, :mod:`foldgate.guard.poison_learned`: the finding carries the model's
score and strongest features); ``semantic-injection`` (a prose field, parameter descriptions, defaults
and enum values included, that the cue-and-vector scorer of :mod:`foldgate.guard.semantic` flags).

How a flagged tool is meant to be held
--------------------------------------
The scan is a gate, not a filter: a tool with findings is indexed but *held* (quarantined) for its
tenant, exactly like a tool whose content hash changed since approval. A held tool is left out of every
listing, search result and ``describe_tool`` answer, and a call to it is refused as ``not_found``, so its
text never reaches a model. The findings (rule, field, excerpt: never the whole text) are stored with
the tool's content hash and shown to the operator in the admin API; an operator who releases the tool
approves that hash only, so an upstream that edits the description is scanned and held again. The scan
never rewrites a description: a cleaned-up poisoned text is still the upstream's text.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from foldgate.guard.poison_learned import LEARNED_RULE, describe_score, learned_fields
from foldgate.guard.poison_rules import (
    BLOB,
    INVISIBLE,
    PHRASE_RULES,
    QUOTED_MENTION_RULES,
    RULE_GATES,
    invisible_trick,
    normalise,
    script_confusion,
)

if TYPE_CHECKING:
    from foldgate.guard.scorer import TextScorer
    from foldgate.guard.semantic import Encoder
    from foldgate.model.tool import Tool

__all__ = [
    "RULES",
    "SEMANTIC_RULE",
    "Finding",
    "entry_fields",
    "prose_fields",
    "scan_entry",
    "scan_fields",
    "scan_findings",
    "scan_tool",
]

# The finding of the cue-and-vector scorer (foldgate.guard.semantic).
SEMANTIC_RULE: Final = "semantic-injection"
RULES: Final = (
    *PHRASE_RULES,
    "invisible-unicode",
    "mixed-script",
    "encoded-blob",
    "title-mismatch",
    LEARNED_RULE,
    SEMANTIC_RULE,
)
_PROSE_CHARS: Final = 16  # shorter strings are labels: no order fits
_MAX_PROSE: Final = 200  # prose fields scored per tool

_EXCERPT: Final = 80
_MAX_FIELD_CHARS: Final = 20_000  # a description longer than this is scanned in its first part only
_MAX_DEPTH: Final = 32  # schemas nest; hostile ones nest without end
_MAX_FIELDS: Final = 2_000  # strings read per tool (a huge enum is not where an attack hides)
_SEP: Final = "\n. "
_NAME_SEP: Final = re.compile(r"[_\-.]+")
_QUOTES: Final = "'\"`\u2018\u2019\u201c\u201d\u00ab\u00bb"
# Words a title shares with any description: they say nothing about its subject.
_STOP: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "get",
        "gets",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "the",
        "this",
        "to",
        "tool",
        "with",
        "your",
        "you",
        "via",
        "list",
        "lists",
        "new",
        "set",
        "sets",
        "use",
        "uses",
        "using",
    ]
)


@dataclass(frozen=True, slots=True)
class Finding:
    """One matched rule: which rule, in which field (``inputSchema.properties.path.description``), and
    a short excerpt of the normalised text around the match (invisible characters shown escaped). A
    ``learned-injection`` finding also has the model's ``score`` and strongest ``features``, and its
    excerpt opens with them (so every view of a finding shows why)."""

    rule: str
    field: str
    excerpt: str
    score: float | None = None
    features: tuple[tuple[str, float], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON-able shape stored with a held tool and shown in the admin API."""
        out: dict[str, Any] = {"rule": self.rule, "field": self.field, "excerpt": self.excerpt}
        if self.score is not None:
            out["score"] = round(self.score, 4)
            out["features"] = [[name, weight] for name, weight in self.features]
        return out


def _excerpt(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - 20), min(len(text), max(end, start + _EXCERPT - 20))
    cut = text[lo:hi]
    # Never hand invisible or control characters on: they are the attack, and the excerpt is shown.
    cut = "".join(c if c.isprintable() and not INVISIBLE.match(c) else f"\\u{ord(c):04x}" for c in cut)
    return ("…" if lo else "") + cut + ("…" if hi < len(text) else "")


def _quoted(text: str, start: int, end: int) -> bool:
    """True when the match is the whole of a quoted span: an example being named, not an instruction."""
    before = text[max(0, start - 2) : start].strip()
    after = text[end : end + 12]
    return bool(before) and before[-1] in _QUOTES and any(q in after for q in _QUOTES)


def _char_findings(path: str, text: str, *, is_name: bool) -> Iterator[Finding]:
    hidden = invisible_trick(text)
    if hidden is not None:
        yield Finding("invisible-unicode", path, _excerpt(text, hidden.start(), hidden.end()))
    mixed = script_confusion(text)
    if mixed is not None:
        yield Finding("mixed-script", path, _excerpt(mixed, 0, len(mixed)))
    elif is_name and not text.isascii() and unicodedata.normalize("NFKC", text) != text:
        # Full-width or compatibility letters in a name: it reads as another tool's name.
        yield Finding("mixed-script", path, _excerpt(text, 0, len(text)))
    blob = BLOB.search(text) if len(text) >= 64 else None
    if blob is not None and (not blob.group().isalnum() or _mixed_case_digits(blob.group())):
        yield Finding("encoded-blob", path, _excerpt(text, blob.start(), blob.start() + 40))


def _mixed_case_digits(run: str) -> bool:
    # A hex blob (longer than any hash) mixes digits and letters; a base64 one mixes upper, lower and
    # digits. Words, repeated letters and identifiers do neither.
    if re.fullmatch(r"[0-9a-fA-F]+", run):
        return len(run) >= 80 and not run.isdigit() and not run.isalpha()
    return any(c.isupper() for c in run) and any(c.islower() for c in run) and any(c.isdigit() for c in run)


def _words(text: str) -> set[str]:
    out: set[str] = set()
    for w in re.findall(r"[a-z0-9]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower()):
        if w not in _STOP and len(w) > 2:
            out.add(w[:5])  # a crude stem: "issues"/"issue", "searching"/"search" meet
    return out


def _title_mismatch(title: str, name: str, description: str) -> Finding | None:
    """A title naming a subject the name and description never mention (a decoy for human review)."""
    words = _words(title)
    if len(words) < 2 or not description.strip():
        return None
    if words & (_words(name.replace("_", " ").replace("-", " ")) | _words(description[:2000])):
        return None
    return Finding("title-mismatch", "title", _excerpt(title, 0, len(title)))


def _schema_strings(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string a JSON Schema shows the model: descriptions, titles, enum values, string defaults."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            key_s = str(key)
            sub = f"{path}.{key_s}"
            if isinstance(value, str) and key_s in ("description", "title", "default", "const", "$comment"):
                yield sub, value
            elif key_s == "properties" and isinstance(value, dict):
                # Parameter names are published too ("ignore_previous_instructions"): read as words, all
                # of one object's names in one field (one field per name costs more than the names).
                if value:
                    yield f"{sub}#names", ". ".join(_NAME_SEP.sub(" ", str(name)) for name in value)
                yield from _schema_strings(value, sub, depth + 1)
            elif key_s in ("enum", "examples") and isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, str):
                        yield f"{sub}[{i}]", item
            elif isinstance(value, dict | list):
                yield from _schema_strings(value, sub, depth + 1)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _schema_strings(item, f"{path}[{i}]", depth + 1)


def _all_strings(node: Any, path: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    """Every string (keys included) anywhere in a JSON value, e.g. ``_meta``."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield f"{path}.{key}#key", str(key)
            yield from _all_strings(value, f"{path}.{key}", depth + 1)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _all_strings(item, f"{path}[{i}]", depth + 1)


def _triggered(literals: tuple[str, ...] | None, text: str) -> bool:
    if literals is None:
        return True
    return any(literal in text for literal in literals)


def scan_fields(fields: Iterable[tuple[str, str]]) -> list[Finding]:
    """Scan ``(field path, text)`` pairs; the field named ``name`` also gets the name-only checks.

    The phrase rules run once over all the fields joined (a separator no pattern crosses: a newline,
    which normalised text never holds, and a full stop), which is what keeps a catalog scan fast; each
    match is then traced back to its field.
    """
    findings: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    spans: list[tuple[int, int, str]] = []
    parts: list[str] = []
    offset = 0
    for count, (path, raw) in enumerate(fields):
        if count >= _MAX_FIELDS:
            break
        text = raw[:_MAX_FIELD_CHARS]
        for finding in _char_findings(path, text, is_name=path == "name"):
            if (finding.rule, path) not in seen:
                seen.add((finding.rule, path))
                findings.append(finding)
        norm = normalise(text)
        spans.append((offset, offset + len(norm), path))
        parts.append(norm)
        offset += len(norm) + len(_SEP)
    joined = _SEP.join(parts)
    starts = [start for start, _, _ in spans]
    for rule, patterns in PHRASE_RULES.items():
        if not _triggered(RULE_GATES.get(rule), joined):
            continue
        for pattern in patterns:
            for match in pattern.finditer(joined):
                lo, hi, path = spans[bisect.bisect_right(starts, match.start()) - 1]
                if (rule, path) in seen:
                    continue
                if rule in QUOTED_MENTION_RULES and _quoted(joined, match.start(), match.end()):
                    continue
                seen.add((rule, path))
                end = min(match.end(), hi)
                findings.append(Finding(rule, path, _excerpt(joined[lo:hi], match.start() - lo, end - lo)))
    return findings


def entry_fields(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(field path, text)`` of every string a ``tools/list`` entry shows the model: name, title,
    description, annotation title, the schemas' descriptions, titles, defaults, consts, enums, examples
    and property names, and every string of ``_meta``."""
    name = entry.get("name", entry.get("tool", ""))
    fields: list[tuple[str, str]] = []
    for key in ("name", "title", "description"):
        value = name if key == "name" else entry.get(key)
        if isinstance(value, str):
            fields.append((key, value))
    annotations = entry.get("annotations")
    if isinstance(annotations, Mapping) and isinstance(annotations.get("title"), str):
        fields.append(("annotations.title", annotations["title"]))
    for key in ("inputSchema", "schema", "outputSchema"):
        fields.extend(_schema_strings(entry.get(key), key))
    fields.extend(_all_strings(entry.get("_meta"), "_meta"))
    return fields


def prose_fields(fields: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The fields the cue-and-vector scorer reads: every string long enough to hold an order (a
    description, a parameter's, a default, an enum value), not the tool's name or property names."""
    return [
        (path, text)
        for path, text in fields
        if len(text) >= _PROSE_CHARS and path != "name" and not path.endswith(("#names", "#key"))
    ][:_MAX_PROSE]


def scan_entry(
    entry: Mapping[str, Any], scorer: TextScorer | None = None, semantic: TextScorer | None = None
) -> list[Finding]:
    """Scan one ``tools/list`` entry (or corpus row) as published; never raises on odd shapes. With a
    ``scorer``, a tool the rules pass has its descriptions scored too (``learned-injection``); with a
    ``semantic`` scorer (:mod:`foldgate.guard.semantic`), every prose field of it as well
    (``semantic-injection``: descriptions, parameter descriptions, defaults, enum values)."""
    name = entry.get("name", entry.get("tool", ""))
    fields = entry_fields(entry)
    findings = scan_fields(fields)
    description = entry.get("description")
    for path, title in fields:
        if path in ("title", "annotations.title") and isinstance(description, str):
            mismatch = _title_mismatch(title, str(name), description)
            if mismatch is not None:
                findings.append(Finding(mismatch.rule, path, mismatch.excerpt))
                break
    if not findings and scorer is not None:
        for path, excerpt, score in learned_fields(entry, scorer):
            line = f"{describe_score(score)} · {excerpt}"
            findings.append(Finding(LEARNED_RULE, path, line, score.probability, score.features))
    if not findings and semantic is not None:
        for path, text in prose_fields(fields):
            score = semantic.score(text)
            if score.flagged:
                line = f"{describe_score(score)} · {_excerpt(' '.join(text.split()), 0, _EXCERPT)}"
                findings.append(Finding(SEMANTIC_RULE, path, line, score.probability, score.features))
                break  # one field says the tool is held; the operator reads the rest
    return findings


def scan_tool(
    tool: Tool, scorer: TextScorer | None = None, semantic: TextScorer | None = None
) -> list[Finding]:
    """Scan a catalog Tool: the same fields as :func:`scan_entry`, from the stored model."""
    entry: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": tool.annotations,
        "_meta": tool.meta,
    }
    if tool.title is not None:
        entry["title"] = tool.title
    return scan_entry(entry, scorer, semantic)


def scan_findings(tool: Tool, encoder: Encoder | None = None) -> list[dict[str, Any]]:
    """:func:`scan_tool` with the shipped models (rules alone where they are absent) as JSON-able
    findings, the shape the indexer's holds store (a ``Scanner``). With the search ``encoder`` the
    indexer already has open, the semantic scorer reads sentence vectors too; without, cues alone."""
    # The models load on the first scan, in the indexer only: serving never pays for them.
    from foldgate.guard.scorer import load_scorer, load_semantic

    return [f.to_json() for f in scan_tool(tool, load_scorer(), load_semantic(encoder))]
