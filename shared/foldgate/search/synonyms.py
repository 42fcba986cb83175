"""Index-time enrichment without a model: verb families of tool APIs, added to a low-weight field.

A tool named ``delete_entities`` should be found by "remove some nodes"; its description may never say
"remove". Each family below is a set of verbs that API authors use interchangeably; when a tool's
name (or title) contains one of them, the others go into the tool's SYNONYMS field. Only names are
expanded: they state the tool's action, while descriptions mention many verbs in passing.
"""

from __future__ import annotations

from collections.abc import Iterable

from foldgate.search.analysis import analyze

__all__ = ["VERB_FAMILIES", "expand"]

# General CRUD vocabulary of tool names, not tuned to any query set.
VERB_FAMILIES: tuple[tuple[str, ...], ...] = (
    ("create", "add", "new", "make", "insert", "register"),
    ("get", "fetch", "read", "retrieve", "obtain", "load", "show", "view", "describe"),
    ("list", "enumerate", "browse"),
    ("search", "find", "query", "lookup", "locate", "filter"),
    ("delete", "remove", "erase", "destroy", "drop", "purge"),
    ("update", "edit", "modify", "change", "patch", "alter", "set"),
    ("write", "save", "store", "persist", "put"),
    ("run", "execute", "invoke", "call", "trigger", "launch", "start"),
    ("send", "post", "publish", "submit"),
    ("move", "rename", "relocate"),
    ("copy", "duplicate", "clone"),
)


def _build() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = {}
    for family in VERB_FAMILIES:
        terms = {t for word in family for t in analyze(word)}
        for t in terms:
            out.setdefault(t, set()).update(terms - {t})
    return {t: frozenset(s) for t, s in out.items()}


_EXPANSIONS = _build()


def expand(terms: Iterable[str]) -> list[str]:
    """Synonym terms for the (already analysed) name terms, excluding terms already present."""
    present = set(terms)
    extra: set[str] = set()
    for t in present:
        extra |= _EXPANSIONS.get(t, frozenset())
    return sorted(extra - present)
