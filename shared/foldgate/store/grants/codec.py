"""What every grant backend seals, and how it reads it back: one sealed JSON document per row.

A row's secrets (tokens, client secret, PKCE verifier) and the fields that say where they may be sent
(issuer, resource, scope, expiry) are sealed together, so the authenticated copy is the one used: a row
whose clear columns were edited still sends its refresh token only to the issuer it was sealed with.
The clear columns a backend keeps beside the seal (state, expiry, scope, reason, time) serve listing
only; a client's clear ``client_id`` and ``claimed_at`` serve the conditional writes of re-registration.

Each document is sealed under a context naming its row (a JSON array, so no two rows' contexts
collide whatever characters tenant, server or subject hold); a sealed value moved to another row does
not open. Pending consents are addressed by the SHA-256 of their ``state``: whoever can read the
database does not learn the states of consents in flight.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any, Final, cast

from foldgate.errors import StoreError
from foldgate.store.grants.base import (
    ClientRegistration,
    GrantCipher,
    GrantState,
    PendingConsent,
    PendingPurpose,
    UpstreamGrant,
)

__all__ = [
    "GRANT_STATES",
    "decode_state",
    "grant_context",
    "link_key",
    "open_client",
    "open_grant",
    "open_key",
    "open_pending",
    "pending_key",
    "seal_client",
    "seal_grant",
    "seal_key",
    "seal_pending",
    "stamped",
]

GRANT_STATES: Final[frozenset[str]] = frozenset({"connected", "expired", "needs_consent"})


def grant_context(tenant: str, server: str, subject: str) -> str:
    """The context a grant is sealed under."""
    return json.dumps(["grant", tenant, server, subject])


def _client_context(tenant: str, server: str, issuer: str) -> str:
    return json.dumps(["client", tenant, server, issuer])


def _key_context(tenant: str, name: str) -> str:
    return json.dumps(["key", tenant, name])


def link_key(nonce: str) -> str:
    """The address of a used connect link: a digest of its nonce, apart from every consent's."""
    return hashlib.sha256(b"link\x1f" + nonce.encode("utf-8", "surrogatepass")).hexdigest()


def pending_key(state: str) -> str:
    """The address of a pending consent: a digest of its ``state``, never the state itself."""
    return hashlib.sha256(state.encode("utf-8", "surrogatepass")).hexdigest()


def _seal(cipher: GrantCipher, doc: dict[str, Any], context: str) -> bytes:
    try:
        data = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8", "surrogatepass")
    except (TypeError, ValueError) as exc:
        raise StoreError(f"grant data is not storable: {exc}") from exc
    return cipher.encrypt(data, context=context)


def _open(cipher: GrantCipher, sealed: bytes, context: str) -> dict[str, Any]:
    data = cipher.decrypt(sealed, context=context)
    try:
        doc = json.loads(data.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise StoreError("sealed grant document is not JSON") from exc
    if not isinstance(doc, dict):
        raise StoreError("sealed grant document is not an object")
    return doc


def _str(doc: dict[str, Any], name: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str):
        raise StoreError(f"stored grant field {name!r} is corrupt")
    return value


def _opt_str(doc: dict[str, Any], name: str) -> str | None:
    value = doc.get(name)
    if value is not None and not isinstance(value, str):
        raise StoreError(f"stored grant field {name!r} is corrupt")
    return value


def _opt_float(doc: dict[str, Any], name: str) -> float | None:
    value = doc.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StoreError(f"stored grant field {name!r} is corrupt")
    return float(value)


def decode_state(value: object) -> GrantState:
    """A stored grant state, checked (an unknown one is corruption, not a new state)."""
    if value not in GRANT_STATES:
        raise StoreError(f"stored grant has an unknown state {value!r}")
    return cast(GrantState, value)


def seal_grant(cipher: GrantCipher, grant: UpstreamGrant) -> bytes:
    """The sealed document of a grant (what is not sealed: state, updated_at, version)."""
    decode_state(grant.state)  # a state no reader accepts is refused at write, not at every read
    doc = {
        "access_token": grant.access_token,
        "token_type": grant.token_type,
        "refresh_token": grant.refresh_token,
        "expires_at": grant.expires_at,
        "scope": grant.scope,
        "issuer": grant.issuer,
        "resource": grant.resource,
        "client_id": grant.client_id,
        "reason": grant.reason,
        "issued_at": grant.issued_at,
        "step_up": grant.step_up,
    }
    return _seal(cipher, doc, grant_context(grant.tenant, grant.server, grant.subject))


def open_grant(
    cipher: GrantCipher,
    sealed: bytes,
    *,
    tenant: str,
    server: str,
    subject: str,
    state: object,
    updated_at: float,
    version: int,
) -> UpstreamGrant:
    """The grant stored under (tenant, server, subject): its sealed document plus its clear columns."""
    doc = _open(cipher, sealed, grant_context(tenant, server, subject))
    return UpstreamGrant(
        tenant=tenant,
        server=server,
        subject=subject,
        access_token=_str(doc, "access_token"),
        token_type=_str(doc, "token_type"),
        refresh_token=_opt_str(doc, "refresh_token"),
        expires_at=_opt_float(doc, "expires_at"),
        scope=_opt_str(doc, "scope"),
        issuer=_opt_str(doc, "issuer"),
        resource=_opt_str(doc, "resource"),
        state=decode_state(state),
        updated_at=float(updated_at),
        version=int(version),
        client_id=_opt_str(doc, "client_id"),
        reason=_opt_str(doc, "reason"),
        issued_at=_opt_float(doc, "issued_at"),
        step_up=_opt_str(doc, "step_up"),
    )


def seal_client(cipher: GrantCipher, client: ClientRegistration) -> bytes:
    """The whole registration, sealed: its ``registration`` may hold a registration access token."""
    doc = {
        "client_id": client.client_id,
        "client_secret": client.client_secret,
        "token_endpoint_auth_method": client.token_endpoint_auth_method,
        "redirect_uris": list(client.redirect_uris),
        "registration": client.registration,
        "registered_at": client.registered_at,
    }
    return _seal(cipher, doc, _client_context(client.tenant, client.server, client.issuer))


def open_client(
    cipher: GrantCipher,
    sealed: bytes,
    *,
    tenant: str,
    server: str,
    issuer: str,
    claimed_at: float | None = None,
) -> ClientRegistration:
    """The registration stored under (tenant, server, issuer); ``claimed_at`` is its clear column."""
    doc = _open(cipher, sealed, _client_context(tenant, server, issuer))
    uris = doc.get("redirect_uris")
    registration = doc.get("registration")
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise StoreError("stored client field 'redirect_uris' is corrupt")
    if not isinstance(registration, dict):
        raise StoreError("stored client field 'registration' is corrupt")
    return ClientRegistration(
        tenant=tenant,
        server=server,
        issuer=issuer,
        client_id=_str(doc, "client_id"),
        client_secret=_opt_str(doc, "client_secret"),
        token_endpoint_auth_method=_str(doc, "token_endpoint_auth_method"),
        redirect_uris=tuple(uris),
        registration=registration,
        registered_at=_opt_float(doc, "registered_at") or 0.0,
        claimed_at=claimed_at,
    )


def seal_key(cipher: GrantCipher, tenant: str, name: str, pem: str) -> bytes:
    """A tenant's private key (PEM), sealed under its own row's context."""
    return _seal(cipher, {"pem": pem}, _key_context(tenant, name))


def open_key(cipher: GrantCipher, sealed: bytes, *, tenant: str, name: str) -> str:
    """The PEM :func:`seal_key` sealed for (tenant, name)."""
    return _str(_open(cipher, sealed, _key_context(tenant, name)), "pem")


def _purpose(value: object) -> PendingPurpose:
    # A consent stored before sign-ins existed has no purpose: it is an upstream consent.
    if value is None or value == "consent":
        return "consent"
    if value == "login":
        return "login"
    raise StoreError("stored pending consent has an unknown purpose")


def seal_pending(cipher: GrantCipher, pending: PendingConsent) -> bytes:
    """The whole pending consent, sealed under its key (the ``state`` digest)."""
    doc = {
        "state": pending.state,
        "tenant": pending.tenant,
        "server": pending.server,
        "subject": pending.subject,
        "code_verifier": pending.code_verifier,
        "redirect_uri": pending.redirect_uri,
        "issuer": pending.issuer,
        "resource": pending.resource,
        "scope": pending.scope,
        "expires_at": pending.expires_at,
        "return_to": pending.return_to,
        "browser": pending.browser,
        "purpose": pending.purpose,
        "nonce": pending.nonce,
    }
    return _seal(cipher, doc, json.dumps(["pending", pending_key(pending.state)]))


def open_pending(cipher: GrantCipher, sealed: bytes, *, state: str) -> PendingConsent:
    """The pending consent sealed for ``state`` (a value sealed for another state does not open)."""
    doc = _open(cipher, sealed, json.dumps(["pending", pending_key(state)]))
    expires_at = _opt_float(doc, "expires_at")
    if expires_at is None or _str(doc, "state") != state:
        raise StoreError("stored pending consent is corrupt")
    return PendingConsent(
        state=state,
        tenant=_str(doc, "tenant"),
        server=_str(doc, "server"),
        subject=_str(doc, "subject"),
        code_verifier=_str(doc, "code_verifier"),
        redirect_uri=_str(doc, "redirect_uri"),
        issuer=_str(doc, "issuer"),
        resource=_opt_str(doc, "resource"),
        scope=_opt_str(doc, "scope"),
        expires_at=expires_at,
        return_to=_opt_str(doc, "return_to"),
        browser=_opt_str(doc, "browser"),
        purpose=_purpose(doc.get("purpose")),
        nonce=_opt_str(doc, "nonce"),
    )


def stamped(grant: UpstreamGrant, *, version: int, updated_at: float) -> UpstreamGrant:
    """The grant as stored: its new version and write time."""
    return replace(grant, version=version, updated_at=updated_at)
