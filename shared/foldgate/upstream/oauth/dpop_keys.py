"""The tenant's DPoP key, shared by every instance, and the Authorization values that use it.

**One key per tenant, in the grant store.** RFC 9449 binds an access token, and a public client's
refresh token (section 5), to the key whose proof came with the token request. A Lambda instance that
refreshes a grant another instance obtained must prove possession of the same key, so a key per
process would strand every grant at the next cold start. The key is made once (P-256), sealed like
the tokens it binds (:meth:`GrantStore.add_key`, a conditional write: two instances racing to make the
first one both end up with the winner's) and kept in memory after the first read.

**Every upstream request proves possession.** A token the authorization server issued as ``DPoP`` is
presented as ``Authorization: DPoP <token>`` (``OAuthContext.present``) together with a proof for that very
request (:class:`DPoPAuthorization`, whose auth flow the session's HTTP clients run per request: the
POSTs, the GET stream, the closing DELETE). A 401 ``DPoP error="use_dpop_nonce"`` with a
``DPoP-Nonce`` is answered by sending the request once more with the nonce; any other refusal
(``invalid_token``: an expired token) goes to the token provider's refresh path as before.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.grants.base import GrantStore
from foldgate.upstream.oauth.discovery import challenge_of
from foldgate.upstream.oauth.dpop import KEY_NAME, NONCE_ERROR, DPoPProver, new_key_pem
from foldgate.upstream.proof_bound import ProofBound

__all__ = ["DPoPAuthorization", "DPoPKeys", "nonce_challenge"]

log = logging.getLogger(__name__)


class DPoPKeys:
    """Each tenant's :class:`DPoPProver`, its key read from (or first made into) the grant store."""

    def __init__(self, store: GrantStore) -> None:
        self.store = store
        self._provers: dict[str, DPoPProver] = {}

    def prover(self, tenant: str) -> DPoPProver:
        """The tenant's prover: cached, else the stored key, else a new one stored if still absent."""
        held = self._provers.get(tenant)
        if held is not None:
            return held
        pem = self.store.get_key(tenant, KEY_NAME)
        if pem is None:
            made = new_key_pem()
            if self.store.add_key(tenant, KEY_NAME, made):
                log.info("%s: made the tenant's DPoP key", tenant)
                pem = made
            else:  # another instance stored one first: its key is the one tokens get bound to
                pem = self.store.get_key(tenant, KEY_NAME)
                if pem is None:
                    raise StoreError(f"{tenant}: the DPoP key vanished while it was being made")
        try:
            prover = DPoPProver(pem)
        except ValueError as exc:
            raise StoreError(f"{tenant}: the stored DPoP key is unusable ({exc})") from None
        self._provers[tenant] = prover
        return prover


def nonce_challenge(status: int, headers: Any) -> str | None:
    """The nonce of a resource server's ``401`` ``use_dpop_nonce`` challenge (RFC 9449 section 9),
    None for any other answer (an ``invalid_token`` is an expired token, never a nonce to retry)."""
    if status != 401:
        return None
    nonce = headers.get("dpop-nonce")
    if not nonce or challenge_of(headers.get("www-authenticate")).error != NONCE_ERROR:
        return None
    return str(nonce)


class DPoPAuthorization(ProofBound):
    """``DPoP <token>``, whose every request carries a fresh proof from the tenant's prover."""

    def __new__(cls, token: str, prover: DPoPProver) -> DPoPAuthorization:
        value = super().__new__(cls, f"DPoP {token}")
        value.__dict__.update(token=token, prover=prover)
        return value

    def __repr__(self) -> str:
        return "DPoPAuthorization(...)"  # the value is a credential

    def flow(self, request: Any) -> Generator[Any, Any, None]:
        """Set the Authorization and a fresh proof; on a nonce challenge, once more with the nonce."""
        prover: DPoPProver = self.__dict__["prover"]
        token: str = self.__dict__["token"]
        url, method = str(request.url), request.method
        request.headers["authorization"] = str(self)
        nonce = prover.nonce("rs", url)
        request.headers["dpop"] = prover.proof(method, url, access_token=token, nonce=nonce)
        response = yield request
        prover.note_nonce("rs", url, response.headers.get("dpop-nonce"))
        fresh = nonce_challenge(response.status_code, response.headers)
        if fresh is None or fresh == nonce:
            return  # the same nonce refused again would be refused again: the caller sees the 401
        request.headers["dpop"] = prover.proof(method, url, access_token=token, nonce=fresh)
        response = yield request
        prover.note_nonce("rs", url, response.headers.get("dpop-nonce"))
