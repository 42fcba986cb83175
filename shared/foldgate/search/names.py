"""Tool-name lookups for the exact-name and prefix boosts: spelling-insensitive, no stemming.

An agent that already knows a name types it in whatever spelling it saw — ``create_issue``,
``createIssue``, ``create issue``, ``github__create_issue`` or ``github:create_issue`` — and should get
that tool first; one that types the start of a name (``create_iss``) should see the names it starts.
All spellings reduce to the same *form*: the lowercase words joined by single spaces.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence

from foldgate.search.analysis import WORD_PATTERN, split_words

__all__ = ["NameMatcher", "name_form", "name_forms"]

# The ASCII word pattern plus a line break as a token of its own, so one findall splits many names.
_WORDS_OR_BREAK = re.compile(f"{WORD_PATTERN}|\n")

_MAX_FORM = 200
_MIN_PREFIX = 3


def name_form(text: str) -> str:
    """The spelling-insensitive form of a name or a query: lowercase words joined by one space."""
    return " ".join(split_words(text))[:_MAX_FORM]


def name_forms(texts: Sequence[str]) -> list[str]:
    """``[name_form(t) for t in texts]``, in a few C-level passes when the texts are ASCII.

    The request path builds the name tables of an 11k-tool catalog on first use; one regex pass over
    all names joined by line breaks is ~5x faster than a pass per name.
    """
    plain = [t if t.isascii() and "\n" not in t else "" for t in texts]
    tokens = _WORDS_OR_BREAK.findall("\n".join(plain))
    forms = [line.strip()[:_MAX_FORM] for line in " ".join(tokens).lower().split("\n")]
    for i, t in enumerate(texts):
        if t and not plain[i]:
            forms[i] = name_form(t)
    return forms


class NameMatcher:
    """Exact and prefix lookups of tool names (and ``server name`` forms) → doc numbers."""

    __slots__ = ("_exact", "_forms", "_prefix_docs")

    def __init__(self, names: Sequence[str], servers: Sequence[str], doc_server: Sequence[int]) -> None:
        exact: dict[str, list[int]] = {}
        pairs: list[tuple[str, int]] = []
        server_forms = name_forms(servers)
        for doc, form in enumerate(name_forms(names)):
            if not form:
                continue
            exact.setdefault(form, []).append(doc)
            srv = server_forms[doc_server[doc]]
            if srv:
                # "github create issue": how github__create_issue and github:create_issue read.
                exact.setdefault(f"{srv} {form}", []).append(doc)
            pairs.append((form, doc))
        pairs.sort()
        self._exact = exact
        self._forms = [p[0] for p in pairs]
        self._prefix_docs = [p[1] for p in pairs]

    def exact(self, form: str) -> list[int]:
        """Docs whose name (or ``server name``) has exactly this form."""
        return self._exact.get(form, [])

    def prefix(
        self, form: str, *, limit: int = 50, visible: Callable[[int], bool] | None = None
    ) -> list[int]:
        """Docs whose name form starts with ``form`` (at least 3 characters), at most ``limit``.

        With ``visible`` only the docs it admits count: hidden names never crowd visible ones out.
        """
        if len(form) < _MIN_PREFIX:
            return []
        out: list[int] = []
        i = bisect.bisect_left(self._forms, form)
        while i < len(self._forms) and len(out) < limit and self._forms[i].startswith(form):
            doc = self._prefix_docs[i]
            if self._forms[i] != form and (visible is None or visible(doc)):
                out.append(doc)
            i += 1
        return out
