"""The result guard's literal gates in one pass: which of every gate literal (the credential detectors'
gates, the secret-named keys' gate, the injection cues) a lower-cased text holds.

Each credential detector runs its regex only when one of its gate literals is in the text, and the
injection side reads only the passages around the cue words present; a result that holds none (most
results) is done. Asking ``literal in text`` for each of ~160 literals read a 10 KB result ~130 times;
here one compiled pattern, a trie of every literal (an alternation factored by shared prefixes, so
each position is tried against the literals that start with its character only), reads it once.

Exact, not approximate: the pattern matches, at each position it tries, the longest literal starting
there, so the literals that are prefixes of a match are present too; the positions a match covers are
not tried again, so a literal that starts inside a match (``pass`` in ``passwd``, ``key`` after
``secret_``) is looked for by itself, only when a literal it could overlap was found. The set is the
one a substring test per literal gives (a test holds the two equal over every literal and texts
built to overlap them). Case-sensitive gates are looked for lower-cased here (a lower-cased literal
is in the lower-cased text whenever the literal is in the text) and confirmed by the detector.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from foldgate.guard.injection_cues import ADDRESS_CUES, ORDER_CUES
from foldgate.guard.secret_assign import NAME_GATE
from foldgate.guard.secret_rules import DETECTORS

__all__ = ["GATE_LITERALS", "LiteralScan", "present_literals"]


class LiteralScan:
    """Finds which of a fixed set of literals a text holds, in one pass of one compiled pattern."""

    def __init__(self, literals: Iterable[str]) -> None:
        self.literals: frozenset[str] = frozenset(w for w in literals if w)
        self._pattern = re.compile(_trie(self.literals))
        ordered = sorted(self.literals)
        # A match's own prefixes that are literals (they start where it starts).
        self._prefixes = {w: frozenset(x for x in ordered if w.startswith(x)) for w in ordered}
        # Literals that may start inside a match, at which offset (a suffix of the match begins them,
        # or they sit inside it past its first character): positions a match covers are not tried
        # again by the pattern, so each is tested where it would start. Worked out per literal on its
        # first match: for all 164 gate literals at once it was ~35 ms of every cold start.
        self._ordered = tuple(ordered)
        self._inside: dict[str, tuple[tuple[int, str], ...]] = {}
        self._reach = max((len(w) for w in ordered), default=0) * 2

    def present(self, text: str) -> frozenset[str]:
        """The literals that occur in ``text`` (the set ``{w for w in literals if w in text}``)."""
        found: set[str] = set()
        seen: set[str] = set()
        for match in self._pattern.finditer(text):
            w, start = match.group(), match.start()
            found |= self._prefixes[w]
            inside = self._inside.get(w)
            if inside is None:
                inside = self._inside[w] = _starting_inside(w, self._ordered)
            if not inside:
                continue
            # What can start inside this match depends only on the text from it on: a repeat is skipped.
            window = text[start : start + self._reach]
            if window in seen:
                continue
            seen.add(window)
            for offset, x in inside:
                if x not in found and text.startswith(x, start + offset):
                    found.add(x)
        return frozenset(found)


def _starting_inside(w: str, literals: Iterable[str]) -> tuple[tuple[int, str], ...]:
    """(offset, literal) for each literal an occurrence of ``w`` may hold from ``offset`` (1..) on."""
    return tuple(
        (k, x) for x in literals for k in range(1, len(w)) if x.startswith(w[k:]) or w[k:].startswith(x)
    )


def _trie(words: Iterable[str]) -> str:
    """One pattern matching, at a position, the longest of ``words`` that starts there."""
    root: dict[str, dict[str, object]] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})  # type: ignore[assignment]
        node[""] = {}

    def build(node: dict[str, dict[str, object]]) -> str:
        alternatives = [re.escape(c) + build(node[c]) for c in sorted(k for k in node if k)]  # type: ignore[arg-type]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else "(?:" + "|".join(alternatives) + ")"
        # A word ends here: what follows is optional (tried first, so the longest word wins).
        return f"(?:{body})?" if "" in node else body

    return build(root)


# Every gate literal, lower-cased: each detector's gate, the secret-named keys' gate and the cues.
GATE_LITERALS: Final = frozenset(
    [g.lower() for d in DETECTORS for g in d.gate] + list(NAME_GATE) + list(ORDER_CUES) + list(ADDRESS_CUES)
)
_SCAN: Final = LiteralScan(GATE_LITERALS)


def present_literals(lowered: str) -> frozenset[str]:
    """The gate literals in ``lowered`` (a text lower-cased offset for offset)."""
    return _SCAN.present(lowered)
