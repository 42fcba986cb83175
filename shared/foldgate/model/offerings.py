"""Upstream prompts, resources and resource templates as indexed: the entry as listed plus the name
or URI it is published under.

Agents see each entry exactly as its upstream listed it except for its identity: a prompt's ``name``
becomes ``server__name`` (the tools' naming rules, :mod:`foldgate.model.naming`), a resource's
``uri`` and a template's ``uriTemplate`` become ``foldgate://server/...`` (:mod:`foldgate.model.uris`).
A server published ``bare`` keeps its prompt names (the tools' rules) and its URIs and templates as
listed, unless another bare server lists the same one or it is in foldgate's own scheme: then that
entry is published the prefixed way.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Final, Literal

from foldgate.model.jsonutil import canonical, sha256_hex
from foldgate.model.naming import assign_names
from foldgate.model.uris import SCHEME, publish_template, publish_uri

__all__ = ["ID_FIELD", "KINDS", "IndexedItem", "Kind", "publish_items"]

Kind = Literal["prompt", "resource", "template"]
KINDS: Final[tuple[Kind, ...]] = ("prompt", "resource", "template")
# The field of a listed entry that identifies it upstream (and is rewritten when published).
ID_FIELD: Final[dict[Kind, str]] = {"prompt": "name", "resource": "uri", "template": "uriTemplate"}


@dataclass(frozen=True)
class IndexedItem:
    """One upstream prompt, resource or resource template; ``entry`` is its listed wire dict."""

    kind: Kind
    server: str
    published: str
    entry: dict[str, Any]

    @property
    def upstream_id(self) -> str:
        """The prompt name, resource URI or URI template as the upstream knows it."""
        return str(self.entry[ID_FIELD[self.kind]])

    @property
    def key(self) -> str:
        """Canonical id for approvals. ``#`` is outside the server-name alphabet, so no tool key
        (``server:tool``) can ever equal a prompt's key."""
        return f"{self.server}#{self.kind}:{self.upstream_id}"

    @cached_property
    def content_hash(self) -> str:
        """Hash of the listed entry (what an agent reads about it) and its server."""
        return sha256_hex(canonical({"kind": self.kind, "server": self.server, "entry": self.entry}))

    def to_wire(self) -> dict[str, Any]:
        """The entry as agents see it: the upstream's, under its published identity."""
        return {**self.entry, ID_FIELD[self.kind]: self.published}

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able document for the stores."""
        return {"kind": self.kind, "server": self.server, "published": self.published, "entry": self.entry}

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> IndexedItem:
        """Inverse of :meth:`to_doc`."""
        return cls(doc["kind"], doc["server"], doc["published"], dict(doc["entry"]))


def publish_items(
    kind: Kind, entries: Iterable[tuple[str, dict[str, Any]]], *, bare: Collection[str] = ()
) -> list[IndexedItem]:
    """Published items for (server, entry) pairs in listing order; prompt names are assigned like tool
    names (valid, unique, hashed on collision); duplicates of one (server, id) keep the first. Entries
    of a server in ``bare`` keep their identity when nothing else claims it."""
    pairs = [(server, entry) for server, entry in entries]
    if kind == "prompt":
        names = assign_names(((server, str(entry["name"])) for server, entry in pairs), bare=bare)
        by_pair = {(n.server, n.tool): n.published for n in names}
        out: list[IndexedItem] = []
        for server, entry in pairs:
            published = by_pair.pop((server, str(entry["name"])), None)
            if published is not None:
                out.append(IndexedItem(kind, server, published, entry))
        return out
    publish = publish_uri if kind == "resource" else publish_template
    claimed: dict[str, set[str]] = {}
    for server, entry in pairs:
        if server in bare:
            claimed.setdefault(str(entry[ID_FIELD[kind]]), set()).add(server)
    seen: set[tuple[str, str]] = set()
    items = []
    for server, entry in pairs:
        ident = (server, str(entry[ID_FIELD[kind]]))
        if ident not in seen:
            seen.add(ident)
            keep = server in bare and len(claimed[ident[1]]) == 1 and not ident[1].startswith(SCHEME)
            items.append(IndexedItem(kind, server, ident[1] if keep else publish(server, ident[1]), entry))
    return items
