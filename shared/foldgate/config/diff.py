"""A readable diff of two tenant documents (``foldgate tenant diff``): a unified diff of their canonical
YAML (keys sorted, so only real changes show), with values that may be credentials hidden.

Hidden: every value of a server's literal ``headers`` and of a stdio server's ``env`` (either may hold
a token). Each shows as ``<hidden>``, or ``<hidden, changed>`` on the new side when it differs from the
old one, so a diff says that a credential changes and never what it was or becomes.
"""

from __future__ import annotations

import difflib
from typing import Any, Final

__all__ = ["HIDDEN", "document_diff", "masked"]

HIDDEN: Final = "<hidden>"
_CHANGED: Final = "<hidden, changed>"
_SENSITIVE: Final = ("headers", "env")


def _old_server(old: dict[str, Any] | None, name: Any) -> dict[str, Any]:
    for server in (old or {}).get("servers") or []:
        if isinstance(server, dict) and server.get("name") == name:
            return server
    return {}


def masked(doc: dict[str, Any] | None, against: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The document with credential-like values hidden; with ``against`` (the old document), a value
    that differs from the same server's same key there shows as changed."""
    if doc is None:
        return None
    servers = []
    for server in doc.get("servers") or []:
        if not isinstance(server, dict):
            servers.append(server)
            continue
        before = _old_server(against, server.get("name")) if against is not None else {}
        out = dict(server)
        for field in _SENSITIVE:
            values = server.get(field)
            if not isinstance(values, dict):
                continue
            held = before.get(field)
            old_values: dict[str, Any] = held if isinstance(held, dict) else {}
            out[field] = {
                k: (_CHANGED if against is not None and k in old_values and old_values[k] != v else HIDDEN)
                for k, v in values.items()
            }
        servers.append(out)
    return {**doc, "servers": servers} if "servers" in doc else doc


def _yaml_lines(doc: dict[str, Any] | None) -> list[str]:
    if doc is None:
        return []
    # Loaded per command: PyYAML only where YAML is written.
    import yaml

    text = yaml.safe_dump(doc, sort_keys=True, allow_unicode=True, width=100)
    return [line + "\n" for line in str(text).splitlines()]


def document_diff(old: dict[str, Any] | None, new: dict[str, Any], old_name: str, new_name: str) -> list[str]:
    """Unified-diff lines from ``old`` (None: nothing stored) to ``new``, credentials hidden; empty when
    the documents are equal."""
    return list(
        difflib.unified_diff(
            _yaml_lines(masked(old)),
            _yaml_lines(masked(new, old if old is not None else {})),
            fromfile=old_name,
            tofile=new_name,
        )
    )
