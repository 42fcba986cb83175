"""Index time: tools → BM25F term saturations, computed once by the indexer, never per request.

For every (term, tool) pair the per-document part of BM25F is computed here:

    tf~(t, d) = sum over fields f of  w_f * tf_f(t, d) / (1 - b_f + b_f * len_f(d) / avglen_f)
    sat(t, d) = tf~ * (k1 + 1) / (k1 + tf~)                      stored, quantised to 8 bits
    score     = sum over query terms t of  idf(t) * sat(t, d),   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))

idf needs only N and the term's posting count, so the query path derives it. Field weights, b and k1
therefore live at build time; changing them means rebuilding, which the indexer does on every catalog
version anyway. The raw term counts per field and the field lengths are stored too: a caller who
sees part of the catalog gets saturations and idf over the tools it sees (foldgate.search.scope).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import chain

from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool
from foldgate.search.analysis import analyze
from foldgate.search.config import DEFAULT, SearchConfig
from foldgate.search.fields import Field, field_texts
from foldgate.search.index import SATURATION_LEVELS, SearchIndex
from foldgate.search.scope import FieldCounts
from foldgate.search.synonyms import expand

__all__ = ["build_search_index", "unique_tools"]


def _doc_fields(tool: Tool, config: SearchConfig, enrichment: Enrichment | None) -> list[Counter[str]]:
    """Term counts per field of one tool (a single merged bag when ``config.merge_fields``)."""
    texts = field_texts(tool, enrichment)
    bags = [Counter(analyze(texts.get(f, ""), stemming=config.stemming)) for f in Field]
    if config.synonyms:
        bags[Field.SYNONYMS] = Counter(expand(chain(bags[Field.NAME], bags[Field.TITLE])))
    if config.merge_fields:
        merged: Counter[str] = Counter()
        for f in Field:
            if config.weights[f] > 0:
                merged.update(bags[f])
        bags = [merged] + [Counter() for _ in range(len(Field) - 1)]
    return bags


def unique_tools(tools: Sequence[Tool]) -> list[Tool]:
    """The tools in order, the first of each ``server:tool`` key only: both indexes number them so."""
    seen: set[str] = set()
    unique: list[Tool] = []
    for t in tools:
        if t.key not in seen:
            seen.add(t.key)
            unique.append(t)
    return unique


def build_search_index(
    tools: Sequence[Tool],
    *,
    config: SearchConfig = DEFAULT,
    enrichments: Mapping[str, Enrichment] | None = None,
) -> SearchIndex:
    """Build the lexical search index of a catalog (run by the indexer, once per catalog version).

    Tools are numbered in the given order; duplicate keys keep the first tool. ``enrichments`` (by
    canonical key) fill the hint and queries fields of the tools they were made for. Never raises on
    odd tool content (empty names, hostile schemas, any script).
    """
    enriched = enrichments or {}
    unique = unique_tools(tools)
    nfields = len(Field)
    weights, bs = config.field_params()

    postings: dict[str, list[tuple[int, list[int]]]] = {}
    lengths: list[list[int]] = []
    for doc, tool in enumerate(unique):
        bags = _doc_fields(tool, config, enriched.get(tool.key))
        lengths.append([sum(bag.values()) for bag in bags])
        per_term: dict[str, list[int]] = {}
        for f, bag in enumerate(bags):
            if weights[f] <= 0:
                continue
            for term, tf in bag.items():
                per_term.setdefault(term, [0] * nfields)[f] = tf
        for term, tfs in per_term.items():
            postings.setdefault(term, []).append((doc, tfs))

    n = len(unique)
    avg = [sum(row[f] for row in lengths) / n if n else 0.0 for f in range(nfields)]
    k1 = config.k1
    # Per (doc, field): w_f / (1 - b_f + b_f * len / avg), so the inner loop below is a dot product.
    norms = [
        [
            weights[f] / (1 - bs[f] + bs[f] * row[f] / avg[f]) if weights[f] > 0 and avg[f] > 0 else 0.0
            for f in range(nfields)
        ]
        for row in lengths
    ]

    terms = sorted(postings)
    sat_max = k1 + 1
    saturations: list[int] = []
    gaps: list[int] = []
    offsets = [0]
    # The raw counts behind each saturation, kept so a caller's scope can redo the length
    # normalisation over the tools it sees (foldgate.search.scope): one row per used field.
    used = [f for f in range(nfields) if weights[f] > 0]
    counts: list[list[int]] = [[] for _ in used]
    for term in terms:
        prev = 0
        for doc, tfs in postings[term]:
            for row, f in zip(counts, used, strict=True):
                row.append(tfs[f])
            norm = norms[doc]
            tfn = sum(norm[f] * tf for f, tf in enumerate(tfs) if tf)
            sat = tfn * sat_max / (k1 + tfn)
            # 8 bits are plenty for a value in [0, k1 + 1): the step is < 1% of its range.
            saturations.append(max(1, round(sat / sat_max * SATURATION_LEVELS)) if sat > 0 else 0)
            # Doc numbers ascend within a term: store gaps, which are small and compress well.
            gaps.append(doc - prev)
            prev = doc
        offsets.append(len(gaps))

    servers = sorted({t.server for t in unique})
    server_no = {s: i for i, s in enumerate(servers)}
    return SearchIndex(
        config=config,
        servers=servers,
        doc_server=[server_no[t.server] for t in unique],
        names=[t.name for t in unique],
        terms=terms,
        offsets=offsets,
        gaps=gaps,
        saturations=saturations,
        fields=FieldCounts(used, counts, [[row[f] for row in lengths] for f in used]),
    )
