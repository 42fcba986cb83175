"""The tokens page's model: listing agent tokens, the create form's validated input, revocation.

Input is validated by :class:`TokenRequest` and then by the authority's own checks (``check_scope``),
the same ones ``foldgate token create`` goes through.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from foldgate.auth.authority import TokenAuthority
from foldgate.errors import FoldgateError
from foldgate.model.agent_token import AgentToken, parse_duration

__all__ = ["SCOPE_FIELD", "TokenRequest", "issue_token", "scope_servers", "token_rows", "token_scope"]

# The create form's checkbox of each of the tenant's servers is named this prefix and the server's name.
SCOPE_FIELD = "scope__"


class TokenRequest(BaseModel):
    """The create form: tenant, scope (comma-separated servers, empty = all), tier, expiry, label."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    tenant: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
    servers: str = Field(default="", max_length=2000)
    tier: Literal["read", "write", "destructive"] = "read"
    expires_in: str = Field(default="90d", max_length=20)
    label: str = Field(default="", max_length=200)


def _state(grant: AgentToken, now: float) -> str:
    return "revoked" if grant.revoked else "expired" if grant.is_expired(now) else "active"


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch)) if epoch else "never"


def token_rows(authority: TokenAuthority, tenant: str) -> list[dict[str, Any]]:
    """The tenant's tokens, newest first (never the tokens themselves: the store only has hashes)."""
    now = time.time()
    rows = [
        {
            "id": g.token_id,
            "state": _state(g, now),
            "tier": g.tier,
            "servers": ", ".join(g.servers) if g.servers is not None else "all",
            "label": g.label or "",
            "created": _when(g.created_at),
            "expires": _when(g.expires_at),
            # Recorded at most once a minute (foldgate.auth.authority.TOUCH_SECONDS).
            "last_used": _when(g.last_used_at),
        }
        for g in authority.list(tenant)
    ]
    rows.reverse()
    return rows


def token_scope(grant: AgentToken) -> str:
    """What a token grants, in one line (never the token): tier, servers and expiry."""
    servers = "all servers" if grant.servers is None else ",".join(grant.servers)
    return f"tier {grant.tier}, {servers}, expires {_when(grant.expires_at)}"


def scope_servers(form: dict[str, str], known: list[str]) -> tuple[str, str | None]:
    """The servers the create form's checkboxes picked, comma-separated (empty: every server), or the
    refusal when a checkbox names a server the tenant does not have (never read as "every server")."""
    picked = [k[len(SCOPE_FIELD) :] for k in form if k.startswith(SCOPE_FIELD)]
    unknown = sorted(name for name in picked if name not in known)
    if unknown:
        return "", f"servers: not servers of this tenant: {', '.join(unknown)[:200]}"
    return ",".join(name for name in known if form.get(SCOPE_FIELD + name)), None


def issue_token(
    authority: TokenAuthority, form: dict[str, str], tenants: list[str]
) -> tuple[str | None, AgentToken | None, str | None]:
    """(token, grant, None) on success, (None, None, why) when the form is refused."""
    try:
        request = TokenRequest.model_validate(form)
    except ValidationError as exc:
        first = exc.errors()[0]
        return None, None, f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    if request.tenant not in tenants:
        return None, None, f"unknown tenant {request.tenant!r}"
    servers = [s.strip() for s in request.servers.split(",") if s.strip()] or None
    try:
        expires = None if request.expires_in == "never" else parse_duration(request.expires_in)
        token, grant = authority.issue(
            request.tenant,
            servers=servers,
            tier=request.tier,
            expires_in=expires,
            label=request.label or None,
        )
    except FoldgateError as exc:
        return None, None, exc.message
    return token, grant, None
