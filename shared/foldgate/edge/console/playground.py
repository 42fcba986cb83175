"""The search playground: ``retrieve_tools`` run exactly as a chosen agent token would run it (its scope,
its tier, the tenant's config), then each hit's score per engine (fused, lexical BM25F, dense cosine)
for the operator, to three digits. Scores stay here: agents get ranks only (a raw score carries corpus
statistics). When the dense half is missing (no embedding model, or an index built without one) the
page says the search is lexical only, why, and how to get the model."""

from __future__ import annotations

import json
import threading
from typing import Any, Final

from foldgate.auth.authority import TokenAuthority
from foldgate.errors import FoldgateError
from foldgate.model.catalog import CatalogVersion
from foldgate.model.principal import Principal
from foldgate.serve.gateway import Gateway
from foldgate.serve.views import TenantView

__all__ = ["EngineScores", "lexical_only", "run_playground", "tail_entry", "token_principal"]

_MAX_QUERY: Final = 500
# Digits a score is shown with: more is noise to a person comparing hits.
_DIGITS: Final = 3


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), _DIGITS)


class EngineScores:
    """Per-engine scores of a catalog version's tools; the indexes are loaded once per version."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._lock = threading.Lock()
        self._loaded: dict[str, tuple[str, Any, Any]] = {}

    def _indexes(self, catalog: CatalogVersion) -> tuple[Any, Any]:
        with self._lock:
            found = self._loaded.get(catalog.tenant)
            if found is not None and found[0] == catalog.version:
                return found[1], found[2]
        # The search stack (and numpy for the dense half) loads with the first playground query.
        from foldgate.search import SearchIndex, build_search_index
        from foldgate.search.dense import DenseIndex

        lexical = (
            SearchIndex.from_doc(catalog.search)
            if catalog.search is not None
            else build_search_index([t.tool for t in catalog.tools])
        )
        dense = DenseIndex.from_doc(catalog.dense) if catalog.dense is not None else None
        with self._lock:
            self._loaded[catalog.tenant] = (catalog.version, lexical, dense)
        return lexical, dense

    def scores(self, view: TenantView, query: str, keys: list[str]) -> dict[str, dict[str, float | None]]:
        """key -> {"fused", "lexical", "dense"} for these keys (None where an engine has no score)."""
        catalog = view.catalog
        lexical, dense = self._indexes(catalog)

        def visible(key: str) -> bool:
            return view.resolve(key) is not None

        # The token's scope, as its agents search: statistics from the tools it sees.
        fused = {
            h.key: h.score
            for h in self.gateway.searchers.for_view(view).search(
                query, limit=max(len(keys), 1) * 3, allowed=visible
            )
        }
        lex_docs = self._scoped(view, lexical).scores(query, allowed=visible)
        lex = {lexical.keys[doc]: score for doc, score in lex_docs.items()}
        cosine = self._dense(dense, query, keys)
        return {
            k: {
                "fused": _rounded(fused.get(k)),
                "lexical": _rounded(lex.get(k)),
                "dense": _rounded(cosine.get(k)),
            }
            for k in keys
        }

    @staticmethod
    def _scoped(view: TenantView, lexical: Any) -> Any:
        """The lexical index over the view's tools only, kept with the view."""
        memo = view.memo.get("playground_lexical")
        if memo is None or memo[0] is not lexical:
            scoped = lexical.scoped([t.tool.key for t in view.visible]) if lexical.scopeable else lexical
            memo = view.memo["playground_lexical"] = (lexical, scoped)
        return memo[1]

    def _dense(self, dense: Any, query: str, keys: list[str]) -> dict[str, float]:
        embedder = self.gateway.searchers.embedder
        if dense is None or embedder is None:
            return {}
        # numpy is already loaded with the dense index; imported here for the dot products only.
        import numpy as np

        try:
            provider = embedder()
            if not dense.compatible(provider):
                return {}
            qv = np.asarray(provider.encode(query), dtype=np.float32).reshape(-1)
        except Exception:  # the provider is down: the page shows the other engines
            return {}
        rows = {k: i for i, k in enumerate(dense.keys)}
        matrix = dense.matrix
        return {k: float(matrix[rows[k]] @ qv) for k in keys if k in rows and dense.present[rows[k]]}


def lexical_only(gateway: Gateway, catalog: CatalogVersion | None) -> str | None:
    """Why this tenant's search has no dense (semantic) half, or None when it has one."""
    if gateway.searchers.embedder is None:
        return "this gateway has no embedding provider"
    provider = gateway.searchers.embedder()
    reason = getattr(provider, "reason", None)
    if provider.dim <= 0:
        if reason == "configured":
            return "the embedding provider is off (FOLDGATE_EMBEDDING_PROVIDER=none)"
        return f"the embedding model could not be loaded ({reason or 'no model'})"
    dense = catalog.dense if catalog is not None else None
    if dense is None:
        return "the catalog was indexed without embeddings; reindex now that the model loads"
    if dense.get("model_id") not in (None, provider.model_id):
        return "the catalog's embeddings are of another model; reindex to rebuild them"
    return None


def token_principal(authority: TokenAuthority | None, tenant: str, token_id: str) -> Principal | str:
    """The caller the query runs as: the operator's unscoped view, or a stored token's grant."""
    if not token_id:
        return Principal(tenant)
    if authority is None:
        return "tokens are not available in this deployment"
    found = authority.store.get(token_id)
    grant = found[0] if found is not None else None
    if grant is None or grant.tenant != tenant:
        return f"no token {token_id} for tenant {tenant}"
    if grant.revoked or grant.is_expired():
        return f"token {token_id} is revoked or expired: agents holding it get nothing"
    servers = frozenset(grant.servers) if grant.servers is not None else None
    return Principal(tenant, servers, grant.tier, grant.token_id)


def tail_entry(line: object) -> dict[str, str]:
    """A compact page's tail line (``name (tier): description``, serve.surfaces.call.tail_line) as a hit."""
    name, _, rest = str(line).partition(" (")
    tier, _, description = rest.partition("): ")
    return {"name": name, "call_with": f"call_tool_{tier}", "description": description}


async def run_playground(
    gateway: Gateway,
    engines: EngineScores,
    authority: TokenAuthority | None,
    tenant: str,
    params: dict[str, str],
) -> dict[str, Any]:
    """The playground's result for these parameters (query, token, limit), or its input error."""
    query = (params.get("query") or "").strip()[:_MAX_QUERY]
    token_id = params.get("token") or ""
    out: dict[str, Any] = {"query": query, "token": token_id, "limit": params.get("limit") or "10"}
    if not query:
        return out
    try:
        limit = min(50, max(1, int(out["limit"])))
    except ValueError:
        return {**out, "error": "limit must be a whole number"}
    out["limit"] = str(limit)
    who = token_principal(authority, tenant, token_id)
    if isinstance(who, str):
        return {**out, "error": who}
    try:
        result = await gateway.call(who, "retrieve_tools", {"query": query, "limit": limit}, surface="call")
    except FoldgateError as exc:
        return {**out, "error": exc.message}
    body = result.get("structuredContent")
    if body is None:
        content = result.get("content") or [{}]
        try:
            body = json.loads(content[0].get("text", "{}"))
        except ValueError:
            body = {}
    if result.get("isError"):
        return {**out, "error": str((result.get("content") or [{}])[0].get("text", "search failed"))}
    view = gateway.view(who)
    hits = []
    entries = [*body.get("tools", []), *map(tail_entry, body.get("more", []))]
    # A compact hit's rank is its position in the answer (agents are not sent it): shown here all the same.
    for rank, entry in enumerate(entries, 1):
        tool = view.resolve(str(entry.get("name")))
        hits.append({"rank": rank, **entry, "key": tool.tool.key if tool is not None else ""})
    scores = engines.scores(view, query, [h["key"] for h in hits if h["key"]])
    out["hits"] = [{**h, "scores": scores.get(h["key"], {})} for h in hits]
    out["intents"] = body.get("intents") or []
    out["visible"] = len(view.visible)
    out["answer"] = json.dumps(body, indent=2, ensure_ascii=False)
    return out
