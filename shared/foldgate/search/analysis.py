"""Text analysis shared by the indexer and the query path: words → index terms.

One function turns any text into terms, so a tool's fields and a query always meet in the same
vocabulary: NFKC-normalise, split on anything that is not a letter or digit (``_``, ``-``, ``.``, ``/``
included), split camelCase and acronym boundaries (``getHTTPResponse`` → get, http, response),
casefold, drop stopwords, Porter-stem (``foldgate.search.stem``). Runs of CJK ideographs or kana
become overlapping character bigrams, the usual lexical treatment of scripts without spaces, so Chinese
descriptions are searchable at all. Everything is bounded: hostile or huge input costs linear time.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from foldgate.search.stem import stem

__all__ = ["STOPWORDS", "WORD_PATTERN", "analyze", "split_words"]

# Letters/digits runs; '_' is a word character for \w, so exclude it explicitly.
_RUN = re.compile(r"[^\W_]+")
# camelCase / PascalCase / ACRONYMWord / trailing digits: "getHTTPResponse2" → get, HTTP, Response2.
# On ASCII text it also does the splitting on everything else, in one C-level findall.
WORD_PATTERN = r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+[a-z]*"
_CAMEL = re.compile(WORD_PATTERN)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")
_MAX_TOKEN = 40

# English function words plus the politeness and filler words of requests ("could you please ...").
# Kept deliberately general: words that name an action or object (show, list, get, file) are not here.
_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves please kindly eg ie etc via also whether within without
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def _piece_words(piece: str) -> Iterator[str]:
    if piece.isascii():
        for word in _CAMEL.findall(piece):
            yield word.lower()
    else:
        yield piece.casefold()


def split_words(text: str) -> list[str]:
    """Lowercase words of ``text`` before stopwords and stemming (camel/snake split, CJK bigrams)."""
    if text.isascii():
        # The common case, and the hot one (names, queries): no normalisation needed.
        return [w.lower() for w in _CAMEL.findall(text)]
    return list(_split_unicode(unicodedata.normalize("NFKC", text)))


def _split_unicode(text: str) -> Iterator[str]:
    for run in _RUN.findall(text):
        pos = 0
        for m in _CJK.finditer(run):
            if m.start() > pos:
                yield from _piece_words(run[pos : m.start()])
            chars = m.group()
            if len(chars) == 1:
                yield chars
            else:
                for i in range(len(chars) - 1):
                    yield chars[i : i + 2]
            pos = m.end()
        if pos < len(run):
            # ASCII pieces (also those next to ideographs: "API接口") still get their camel split.
            yield from _piece_words(run[pos:])


def analyze(text: str, *, stemming: bool = True, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Index terms of ``text`` in order, duplicates kept (term frequency matters to the caller)."""
    out: list[str] = []
    for word in split_words(text):
        if word in stopwords or len(word) > _MAX_TOKEN:
            continue
        # Single ASCII letters are noise ("a", "s" from "user's"); single digits and ideographs are not.
        if len(word) == 1 and word.isascii() and word.isalpha():
            continue
        out.append(stem(word) if stemming else word)
    return out
