"""Near-duplicate tools of a catalog, so each tool is enriched with its neighbours in view.

Three kinds of neighbour, each found by bucketing (never by comparing all pairs, which is 60M pairs
on an 11k-tool catalog):

- a CRUD family: the same server's tools on the same object (``create_issue``, ``get_issue``,
  ``update_issues``): bucketed by (server, the name without its leading verb, plural stripped);
- the same tool on several servers or marketplaces: bucketed by the name's spelling-insensitive form;
- near-identical descriptions: MinHash over word-pair shingles, banded (locality-sensitive hashing),
  each candidate verified by its real Jaccard similarity.

Every bucket contributes at most ``_WINDOW`` candidates per tool (the members nearest in catalog
order) and every tool keeps at most ``limit`` neighbours, so the work is linear in the catalog and
the prompts stay bounded whatever the upstreams list. Names and descriptions are hostile input: only
lowercase ASCII word runs are used for bucketing, and neighbour descriptions are cut short.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from foldgate.enrich.base import Neighbour
from foldgate.model.tool import Tool

__all__ = ["DEFAULT_LIMIT", "find_neighbours", "name_stem"]

# Neighbours shown per tool: enough to say what differs, few enough to keep a small model's prompt short.
DEFAULT_LIMIT = 4
# Candidates one bucket gives a tool: the members nearest to it in catalog order (bounds huge buckets
# such as a ``search`` tool on hundreds of servers).
_WINDOW = 16
# A description neighbour must share at least this fraction of its word-pair shingles.
_MIN_JACCARD = 0.5
# MinHash: 8 hashes in 4 bands of 2 (a pair at Jaccard 0.7 shares a band with probability ~0.93).
_HASHES = 8
_ROWS = 2
_MASK = (1 << 32) - 1
_SEEDS = tuple((0x9E3779B1 * (i + 1) & _MASK, 0x85EBCA77 * (i + 7) & _MASK) for i in range(_HASHES))
# Only the start of a description is shingled (cost) and shown (prompt size).
_SHINGLE_CHARS = 1500
_SHOWN_CHARS = 300
_MAX_SHINGLES = 200

_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
# Leading verbs that make a CRUD family: the object is what remains of the name.
_VERBS = frozenset(
    [
        "add",
        "append",
        "archive",
        "batch",
        "bulk",
        "cancel",
        "change",
        "check",
        "close",
        "count",
        "create",
        "del",
        "delete",
        "describe",
        "disable",
        "download",
        "edit",
        "enable",
        "fetch",
        "find",
        "get",
        "insert",
        "list",
        "lookup",
        "make",
        "modify",
        "move",
        "new",
        "open",
        "patch",
        "post",
        "put",
        "query",
        "read",
        "remove",
        "rename",
        "replace",
        "retrieve",
        "save",
        "search",
        "set",
        "show",
        "start",
        "stop",
        "update",
        "upload",
        "upsert",
        "view",
        "write",
    ]
)


def _words(text: str) -> list[str]:
    return _WORD.findall(_CAMEL.sub(" ", text[:200]).lower())


def name_stem(name: str) -> str | None:
    """The object of a verb-led tool name (``create_issues`` → ``issue``); None when the name does not
    start with a known verb or names nothing after it."""
    words = _words(name)
    if len(words) < 2 or words[0] not in _VERBS:
        return None
    rest = words[1:]
    if rest[0] in _VERBS:  # "bulk_delete_issues", "batch_get_items"
        rest = rest[1:]
    if not rest:
        return None
    last = rest[-1]
    if len(last) > 3 and last.endswith("s") and not last.endswith("ss"):
        rest = [*rest[:-1], last[:-1]]
    return " ".join(rest)


def _shingles(description: str) -> set[int]:
    words = _WORD.findall(description[:_SHINGLE_CHARS].lower())
    if len(words) < 2:
        return {zlib.crc32(w.encode()) for w in words}
    pairs = {zlib.crc32(f"{a} {b}".encode()) for a, b in itertools.pairwise(words)}
    return set(sorted(pairs)[:_MAX_SHINGLES])


def _bands(shingles: set[int]) -> list[tuple[int, ...]]:
    if not shingles:
        return []
    mins = [min(((h * a + b) & _MASK) for h in shingles) for a, b in _SEEDS]
    return [(i, *mins[i : i + _ROWS]) for i in range(0, _HASHES, _ROWS)]


@dataclass(frozen=True, slots=True)
class _Entry:
    tool: Tool
    shingles: frozenset[int]


def _window(members: list[int], position: int) -> list[int]:
    """At most ``_WINDOW`` members of a bucket (sorted doc numbers), those nearest to ``position``."""
    if len(members) <= _WINDOW + 1:
        return members
    import bisect  # only huge buckets need it

    at = bisect.bisect_left(members, position)
    lo = max(0, min(at - _WINDOW // 2, len(members) - _WINDOW - 1))
    return members[lo : lo + _WINDOW + 1]


def find_neighbours(
    tools: Sequence[Tool], *, limit: int = DEFAULT_LIMIT, only: set[str] | None = None
) -> dict[str, tuple[Neighbour, ...]]:
    """Each tool's near-duplicates (by canonical key), the closest first, at most ``limit`` each.

    ``only`` restricts the answer to these keys (the tools about to be enriched); every tool of the
    catalog is still a candidate neighbour. Tools without neighbours are absent from the answer.
    """
    entries = [_Entry(t, frozenset(_shingles(t.description))) for t in tools]
    buckets: dict[tuple[object, ...], list[int]] = {}
    keys_of: list[list[tuple[object, ...]]] = []
    for doc, e in enumerate(entries):
        keys: list[tuple[object, ...]] = []
        stem = name_stem(e.tool.name)
        if stem is not None:
            keys.append(("crud", e.tool.server, stem))
        form = " ".join(_words(e.tool.name))
        if form:
            keys.append(("name", form))
        keys.extend(("text", *band) for band in _bands(set(e.shingles)))
        for key in keys:
            buckets.setdefault(key, []).append(doc)
        keys_of.append(keys)

    out: dict[str, tuple[Neighbour, ...]] = {}
    for doc, e in enumerate(entries):
        if only is not None and e.tool.key not in only:
            continue
        scored: dict[int, float] = {}
        for key in keys_of[doc]:
            for other in _window(buckets[key], doc):
                if other == doc or entries[other].tool.key == e.tool.key:
                    continue
                score = _score(key[0], e, entries[other])
                if score > scored.get(other, 0.0):
                    scored[other] = score
        if not scored:
            continue
        best = sorted(scored, key=lambda o: (-scored[o], o))[:limit]
        out[e.tool.key] = tuple(
            Neighbour(
                name=entries[o].tool.name[:200],
                server=entries[o].tool.server[:200],
                description=entries[o].tool.description[:_SHOWN_CHARS],
            )
            for o in best
        )
    return out


def _score(kind: object, a: _Entry, b: _Entry) -> float:
    """How close a candidate is: a CRUD sibling or a namesake ranks above a mere look-alike text;
    0 drops a description candidate below the Jaccard threshold."""
    union = len(a.shingles | b.shingles)
    jaccard = len(a.shingles & b.shingles) / union if union else 0.0
    if kind == "crud":
        return 2.0 + jaccard
    if kind == "name":
        return 1.0 + jaccard
    return jaccard if jaccard >= _MIN_JACCARD else 0.0
