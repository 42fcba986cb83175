"""Ranking parameters: BM25F field weights and saturation, enrichment switches, query-time boosts.

The defaults were measured on the tuning sets (mcpproxy's golden set over corpus_v2, MCPToolBench++),
one idea at a time against the rest of the configuration (Recall@5 / nDCG@10 on golden; Recall@5 on
MCPToolBench++ in brackets):

- final configuration: 0.809 / 0.728 [0.950]; ``PLAIN`` (one merged field, none of the below):
  0.752 / 0.685 [0.937]
- BM25F fields instead of one merged bag: +0.043 / +0.039 [-0.019]  (kept: golden gains more than tb loses)
- name weight 5 instead of 1: +0.004 / +0.004 [+0.004]
- parameter field at weight 0.25: vs 0.5 +0.011 / +0.003 [0]; vs off -0.007 / -0.002 [+0.003, R@1 +0.014]
- verb-family synonyms of name verbs: +0.029 / +0.030 [+0.010]
- Porter stemming: +0.089 / +0.089 [-0.017]
- the 135-word stopword list instead of a 33-word one: +0.022 / +0.008 [+0.005]
- server field, exact-name and prefix boosts: 0 on both sets (their queries never name a server or a tool)
- dropped: server-aware boost 0.2 (-0.000 / -0.004 [-0.001]), enum values in the parameter field
  (0 / 0 [0], bigger index), a lead-sentence field (+0.017 / +0.003 [+0.002], one query: noise, and
  -0.007 R@5 on the corpus_v1 variant of the golden set).

``PLAIN`` is classic single-field BM25 over name, title, description and parameters — the baseline every
idea was measured against. A config is stored inside each serialised index, so a catalog version
keeps ranking the way it was built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from foldgate.search.fields import Field

__all__ = ["DEFAULT", "PLAIN", "SearchConfig"]

_NFIELDS = len(Field)
# The generated hint and queries of an enriched tool (foldgate.enrich); tools without an enrichment
# have empty fields and score as before. Chosen on the tuning sets with the local gemma3-270m's output
# (20 of 45 golden tools and 57 of 87 MCPToolBench++ tools enriched, the rest rejected by validation);
# golden Recall@5 / nDCG@10, MCPToolBench++ Recall@5 / nDCG@10 against no enrichment 0.798 / 0.727,
# 0.950 / 0.897: the hint at any weight from 0.05 to 1 loses a golden query (R@5 -0.021, nDCG -0.007
# to -0.020), so it is off; queries at 0.1 leave golden unchanged and give MCPToolBench++ -0.004 /
# +0.002 (R@1 +0.006), at 0.5 and 1 -0.010 / -0.006. A stronger model's text is re-measured with
# ``foldgate bench search --enrich ... --enrich-weights HINT,QUERIES``.
HINT_WEIGHT = 0.0
QUERIES_WEIGHT = 0.1
# Indexes serialised before the enrichment fields carry one weight and b per older field: the new
# fields load switched off (weight 0), which is what those indexes were built with.
_PADDING = {"weights": 0.0, "b": 0.75}


@dataclass(frozen=True, slots=True)
class SearchConfig:
    """How a search index is built (weights, b, k1, enrichment) and how queries are ranked (boosts).

    ``weights`` and ``b`` are indexed by :class:`~foldgate.search.fields.Field`. Boosts are fractions
    of the query's best lexical score, so they mean the same on any catalog size.
    """

    k1: float = 1.2
    weights: tuple[float, ...] = (5.0, 2.0, 1.0, 0.25, 1.0, 0.5, HINT_WEIGHT, QUERIES_WEIGHT)
    b: tuple[float, ...] = (0.3, 0.5, 0.75, 0.75, 0.3, 0.3, 0.75, 0.75)
    stemming: bool = True
    synonyms: bool = True
    # True: classic single-field BM25 over the concatenation of every field whose weight is > 0.
    merge_fields: bool = False
    # Query time: every pooled tool rises by this fraction of its server's best score, so the tools of
    # a strongly matching server rank together. Off: it measured slightly negative on both tuning
    # sets; kept as a knob for fusion with a dense signal, where it may pay.
    server_boost: float = 0.0
    # Query time: the query is a tool's name (any spelling: create_issue, createIssue, "create issue",
    # github__create_issue, github:create_issue) → that tool gains this multiple of the best score.
    exact_name_boost: float = 1.0
    # Query time: the query is the start of a tool's name (typeahead) → this fraction of the best score.
    prefix_boost: float = 0.5

    def __post_init__(self) -> None:
        if len(self.weights) != _NFIELDS or len(self.b) != _NFIELDS:
            raise ValueError(f"weights and b need {_NFIELDS} values, one per Field")

    def to_doc(self) -> dict[str, Any]:
        """JSON-able form (stored inside a serialised index)."""
        doc = dataclasses.asdict(self)
        doc["weights"] = list(self.weights)
        doc["b"] = list(self.b)
        return doc

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> SearchConfig:
        """Inverse of :meth:`to_doc`; unknown keys (from a newer writer) are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in doc.items() if k in known}
        for key in ("weights", "b"):
            if key in kwargs:
                values = tuple(float(x) for x in kwargs[key])
                kwargs[key] = values + (_PADDING[key],) * (_NFIELDS - len(values))
        return cls(**kwargs)

    def field_params(self) -> tuple[list[float], list[float]]:
        """Per-field weight and b as the index is built: one merged bag in field 0 when merged."""
        if self.merge_fields:
            rest = [0.0] * (_NFIELDS - 1)
            return [1.0, *rest], [self.b[Field.DESCRIPTION], *rest]
        return list(self.weights), list(self.b)

    def replace(self, **changes: Any) -> SearchConfig:
        """A copy with some parameters changed (ablations, tests)."""
        return dataclasses.replace(self, **changes)


DEFAULT = SearchConfig()
PLAIN = SearchConfig(
    # name, title, description, parameters: the fields of the published plain-BM25 baseline.
    weights=(1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0),
    b=(0.75,) * _NFIELDS,
    synonyms=False,
    merge_fields=True,
    server_boost=0.0,
    exact_name_boost=0.0,
    prefix_boost=0.0,
)
