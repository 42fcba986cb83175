"""A per-person server's declared tools as a :class:`Listing`, checked like a fetched one.

The indexer lists a ``per_user`` upstream with the tenant's shared connection. When there is none (the
upstream refuses with :class:`UpstreamConsentError` for the shared subject) and the operator declared
the server's tools (``auth: {kind: per_user, tools: [...]}``), the declaration is published instead,
marked ``declared``. The same for ``token_exchange`` and ``id_jag`` with an inbound subject token and no
``listing_subject_token`` (nobody to list as). Every entry goes through :func:`check_tool_entry`, as
an upstream's would.
"""

from __future__ import annotations

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import IdJagAuth, PerUserAuth, TokenExchangeAuth
from foldgate.upstream.client import Listing, check_tool_entry

__all__ = ["declared_listing"]


def declared_listing(server: ServerConfig) -> Listing | None:
    """The server's declared tools as a listing (None when it declares none)."""
    auth = server.auth
    if not isinstance(auth, PerUserAuth | TokenExchangeAuth | IdJagAuth) or auth.tools is None:
        return None
    listing = Listing(declared=True)
    for tool in auth.tools:
        raw = tool.wire()
        reason = check_tool_entry(raw)
        if reason is not None:
            listing.skipped.append((tool.name, reason))
        else:
            listing.tools.append(raw)
    return listing
