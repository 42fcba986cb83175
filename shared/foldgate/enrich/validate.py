"""Validation of a model's enrichment: untrusted text in, a stored :class:`Enrichment` or a rejection out.

Generated text is treated like upstream text, because it is made from upstream text: a poisoned
description can steer the model into writing the attack into the hint. So the answer runs through the
same poisoning rules the indexer applies to a tool's own fields (:func:`foldgate.guard.poison_scan.
scan_fields`, and the learned injection scorer when one is given) and any finding rejects it. Then the
shape: the hint is one sentence of bounded length, the queries 3-5 short distinct lines, both mostly
letters of the tool's own scripts, no repetition loops or gibberish (what a small model produces when
it fails: copies of the prompt's worked examples, echoes of its layout, a hint that names nothing of
its tool or whose action is only a neighbour's), and no link, mail address or IP address (nothing to
send data to). A malformed query is dropped; the answer fails when fewer than three are left. Markup,
control and invisible characters are stripped from what is kept. Pure and fast.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from foldgate.enrich.base import EnrichmentError, EnrichmentRequest, RawEnrichment
from foldgate.enrich.prompt import EXAMPLE_TEXTS
from foldgate.guard.poison_scan import scan_fields
from foldgate.model.enrichment import Enrichment
from foldgate.search.analysis import STOPWORDS

if TYPE_CHECKING:
    from foldgate.guard.scorer import TextScorer

__all__ = ["EnrichmentRejected", "clean_text", "validate"]

HINT_CHARS: Final = (20, 240)
HINT_WORDS: Final = (4, 40)
QUERY_CHARS: Final = (3, 80)
QUERY_WORDS: Final = (1, 14)
QUERIES: Final = (3, 5)
_MIN_LETTER_SHARE: Final = 0.6  # of the non-space characters: the rest is digits and punctuation
_MIN_SCRIPT_SHARE: Final = 0.9  # of the letters: in a script the tool's own text is written in
_MAX_TOKEN: Final = 40  # a longer "word" is a blob or a loop, not language

# Tags (HTML, pseudo-XML like <IMPORTANT>), markdown emphasis, code ticks and headings.
_TAG: Final = re.compile(r"<[^<>\n]{0,200}>")
_MARKDOWN: Final = re.compile(r"\*\*|__|`+|^#+\s*|^>\s*", re.M)
_ABBREVIATIONS: Final = re.compile(r"\b(?:e\.g|i\.e|etc|vs|approx|incl|no|cf)\.", re.I)
_SENTENCE_END: Final = re.compile(r"[.!?\u3002\uff01\uff1f](?=\s+\S)")
_RUN: Final = re.compile(r"(.)\1{4,}")  # the same character five times: "!!!!!", "aaaaa", "-----"
_WORD: Final = re.compile(r"\w+")
# Addresses: a hint names no link, mailbox or host to send anything to (an attack's destination).
_ADDRESS: Final = re.compile(
    r"[a-z][a-z0-9+.-]{1,15}://|\bwww\.|[\w.+-]+@[\w-]+\.\w|\b\d{1,3}(?:\.\d{1,3}){3}\b", re.I
)
_HIDDEN_CATEGORIES: Final = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
# The prompt's own structure echoed back: a neighbour's line ('"x" on server "y": "…"') or a field label.
_ECHO: Final = re.compile(
    r'\bon server\b|"\s*:\s*"|^\W*(?:hint|queries|tool|title|description|parameters|similar tools)\s*:', re.I
)
_CAMEL: Final = re.compile(r"([a-z])([A-Z])")
_COPY_SHARE: Final = 0.75  # of a worked example's words found in a text: it was copied, not written
# What a tool does to its subject, by the words that say it: a hint whose action is one its own text
# never names but a neighbour's name does describes the neighbour (a small model's usual confusion).
_ACTIONS: Final = {
    word: action
    for action, words in {
        "create": "create creates add adds insert inserts register registers",
        "update": "update updates edit edits modify modifies change changes rename renames",
        "delete": "delete deletes remove removes unregister unregisters drop drops",
        "list": "list lists enumerate enumerates",
        "read": "get gets read reads fetch fetches retrieve retrieves view views show shows obtain returns",
        "search": "search searches find finds lookup",
        "merge": "merge merges",
    }.items()
    for word in words.split()
}
_LEAD: Final = re.compile(r"^\s*use\s+(?:it\s+|this\s+)?(?:to|for|when you need to)\s+(\w+)", re.I)
# Words that say nothing about a tool's subject (the stems a hint must share with the tool are others):
# the search analyser's function words, plus the words every tool description uses.
_STOP: Final = STOPWORDS | frozenset(
    ["get", "gets", "given", "tool", "tools", "use", "used", "uses", "using"]
)
# Scripts that write one language together (Japanese mixes kana and kanji).
_SCRIPT_FAMILY: Final = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HANGUL": "CJK"}


class EnrichmentRejected(EnrichmentError):
    """The model's answer failed validation; ``reason`` is a short code (``hint-sentences``,
    ``poisoning:instruction-override``, ...) for the run's report, never the rejected text."""

    code = "enrichment_rejected"

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"enrichment rejected: {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason


def clean_text(text: str) -> str:
    """``text`` without markup, control, format (invisible) or private-use characters, whitespace
    folded to single spaces, NFKC-normalised (full-width and compatibility letters folded)."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(" " if unicodedata.category(c) in _HIDDEN_CATEGORIES else c for c in text)
    text = _TAG.sub(" ", text)
    text = _MARKDOWN.sub("", text)
    return " ".join(text.split()).strip(" \"'\u201c\u201d\u2018\u2019")


def _script(char: str) -> str:
    name = unicodedata.name(char, "")
    first = name.split(" ", 1)[0]
    return _SCRIPT_FAMILY.get(first, first)


def _letter_scripts(text: str) -> Counter[str]:
    return Counter(_script(c) for c in text if c.isalpha())


def _tool_scripts(request: EnrichmentRequest) -> set[str]:
    """The scripts the tool is written in: any script of its name, and each holding at least a tenth
    of the letters of its title and description. Latin always (names, products, code words)."""
    counts = _letter_scripts(f"{request.title} {request.description[:4000]}")
    total = sum(counts.values())
    scripts = {s for s, n in counts.items() if total and n / total >= 0.1}
    return scripts | set(_letter_scripts(request.name)) | {"LATIN"}


def _check_language(field: str, text: str, allowed: set[str]) -> None:
    visible = [c for c in text if not c.isspace()]
    letters = _letter_scripts(text)
    n_letters = sum(letters.values())
    if not visible or n_letters / len(visible) < _MIN_LETTER_SHARE:
        raise EnrichmentRejected(f"{field}-not-words")
    if sum(n for s, n in letters.items() if s in allowed) / n_letters < _MIN_SCRIPT_SHARE:
        raise EnrichmentRejected(f"{field}-script", ",".join(sorted(set(letters) - allowed))[:80])


def _check_loops(field: str, text: str) -> None:
    """Repetition loops and gibberish: a character run, an over-long token, a word or a three-word
    phrase said again and again."""
    if _RUN.search(text):
        raise EnrichmentRejected(f"{field}-repetition", "character run")
    words = [w.casefold() for w in _WORD.findall(text)]
    if any(len(w) > _MAX_TOKEN for w in words):
        raise EnrichmentRejected(f"{field}-gibberish", "over-long token")
    if len(words) >= 8:
        if len(set(words)) / len(words) < 0.5:
            raise EnrichmentRejected(f"{field}-repetition", "few distinct words")
        trigrams = Counter(zip(words, words[1:], words[2:], strict=False))
        if trigrams and trigrams.most_common(1)[0][1] >= 3:
            raise EnrichmentRejected(f"{field}-repetition", "repeated phrase")
    if words and max(Counter(words).values()) > 4:
        raise EnrichmentRejected(f"{field}-repetition", "repeated word")


def _word_count(text: str) -> int:
    """Words between spaces; in scripts written without spaces (Chinese, Japanese) two characters
    count as a word."""
    cjk = sum(1 for c in text if c.isalpha() and _script(c) == "CJK")
    return max(len(text.split()), cjk // 2)


def _stems(text: str) -> set[str]:
    """Content words, crudely stemmed (their first five letters), identifiers split at _ - . and case;
    in scripts written without spaces, every pair of characters."""
    # Both spellings of a camel-cased word: "GitHub" meets "github" and "getTime" meets "time".
    split = _CAMEL.sub(r"\1 \2", text)
    spaced = f"{text} {split}".replace("_", " ").replace("-", " ").casefold()
    out: set[str] = set()
    for w in _WORD.findall(spaced):
        if any(_script(c) == "CJK" for c in w):
            out.update(w[i : i + 2] for i in range(len(w) - 1))
        elif w not in _STOP and len(w) > 2:
            out.add(w[:5])
    return out


_EXAMPLE_STEMS: Final = tuple(_stems(text) for text in EXAMPLE_TEXTS)


def _check_copied(field: str, text: str) -> None:
    """The prompt echoed: a worked example's answer (mostly) or the prompt's field layout."""
    if _ECHO.search(text):
        raise EnrichmentRejected(f"{field}-echo")
    words = _stems(text)
    for example in _EXAMPLE_STEMS:
        if example and len(words & example) / len(example) >= _COPY_SHARE:
            raise EnrichmentRejected(f"{field}-copied-example")


def _own_stems(request: EnrichmentRequest) -> set[str]:
    return _stems(" ".join([request.name, request.title, request.description[:4000], *request.params]))


def _check_grounded(hint: str, own: set[str]) -> None:
    """A hint names something of its tool: a word of its name, title, description or parameters."""
    if not _stems(hint) & own:
        raise EnrichmentRejected("hint-ungrounded")


def _actions(text: str) -> set[str]:
    return {
        a
        for w in _WORD.findall(_CAMEL.sub(r"\1 \2", text).replace("_", " ").casefold())
        if (a := _ACTIONS.get(w))
    }


def _check_not_a_neighbour(hint: str, request: EnrichmentRequest) -> None:
    """The hint's action ("Use to <verb>") is its tool's, not only a neighbour's."""
    lead = _LEAD.match(hint)
    action = _ACTIONS.get(lead.group(1).casefold()) if lead else None
    if action is None:
        return
    own = _actions(" ".join([request.name, request.title, request.description[:4000]]))
    if action not in own and any(action in _actions(n.name) for n in request.neighbours):
        raise EnrichmentRejected("hint-describes-neighbour", action)


def _check_addresses(field: str, text: str) -> None:
    if _ADDRESS.search(text):
        raise EnrichmentRejected(f"{field}-address")


def _check_bounds(field: str, text: str, chars: tuple[int, int], words: tuple[int, int]) -> None:
    n_words = _word_count(text)
    if not chars[0] <= len(text) <= chars[1]:
        raise EnrichmentRejected(f"{field}-length", f"{len(text)} characters")
    if not words[0] <= n_words <= words[1]:
        raise EnrichmentRejected(f"{field}-words", f"{n_words} words")


def _scan(fields: Iterable[tuple[str, str]], scorer: TextScorer | None) -> None:
    """The indexer's poisoning rules (and its learned scorer, when given) over generated text."""
    pairs = list(fields)
    findings = scan_fields(pairs)
    if findings:
        first = findings[0]
        raise EnrichmentRejected(f"poisoning:{first.rule}", first.field)
    if scorer is not None:
        for path, text in pairs:
            score = scorer.score(text)
            if score.flagged:
                raise EnrichmentRejected("poisoning:learned-injection", path)


def _distinct(queries: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for q in queries:
        key = " ".join(_WORD.findall(q.casefold()))
        if key and key not in seen:
            seen.add(key)
            out.append(q)
    return out


def validate(
    raw: RawEnrichment,
    request: EnrichmentRequest,
    *,
    source: str,
    scorer: TextScorer | None = None,
) -> Enrichment:
    """The stored enrichment of ``request``'s tool version made from ``raw``, or
    :class:`EnrichmentRejected` naming the first rule it broke. ``scorer``: the learned injection
    scorer the indexer's scan uses (:func:`foldgate.guard.scorer.load_scorer`), or None for rules only."""
    # The raw text first: hidden characters and markup are findings before they are stripped.
    raw_fields = [("hint", raw.hint), *((f"queries[{i}]", q) for i, q in enumerate(raw.queries[:10]))]
    _scan(raw_fields, None)
    hint = clean_text(raw.hint)
    queries = _distinct(clean_text(q).rstrip("?.!") for q in raw.queries[:10])
    _scan([("hint", hint), *((f"queries[{i}]", q) for i, q in enumerate(queries))], scorer)

    _check_bounds("hint", hint, HINT_CHARS, HINT_WORDS)
    if len(_SENTENCE_END.findall(_ABBREVIATIONS.sub("", hint))) > 0:
        raise EnrichmentRejected("hint-sentences")
    allowed = _tool_scripts(request)
    _check_language("hint", hint, allowed)
    _check_loops("hint", hint)
    _check_addresses("hint", hint)
    _check_copied("hint", hint)
    own = _own_stems(request)
    _check_grounded(hint, own)
    _check_not_a_neighbour(hint, request)

    hint_key = " ".join(_WORD.findall(hint.casefold()))
    kept: list[str] = []
    dropped: list[str] = []
    for query in queries:
        if " ".join(_WORD.findall(query.casefold())) == hint_key:
            continue
        try:  # one malformed query is dropped; the answer fails only when too few are left
            _check_bounds("query", query, QUERY_CHARS, QUERY_WORDS)
            _check_language("query", query, allowed)
            _check_loops("query", query)
            _check_addresses("query", query)
            _check_copied("query", query)
        except EnrichmentRejected as exc:
            dropped.append(exc.reason)
            continue
        kept.append(query)
    if len(kept) < QUERIES[0]:
        raise EnrichmentRejected(
            "queries-count", f"{len(kept)} kept" + (f", {dropped[0]}" if dropped else "")
        )
    queries = kept[: QUERIES[1]]
    # A user's words may differ from the tool's (that is what queries are for), but an answer none of
    # whose queries shares a word with the tool is about something else: a small model's invention.
    if not any(_stems(q) & own for q in queries):
        raise EnrichmentRejected("queries-ungrounded")
    return Enrichment(hint=hint, queries=tuple(queries), content_hash=request.content_hash, source=source)
