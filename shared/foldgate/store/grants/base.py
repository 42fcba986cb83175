"""Where upstream credentials live: the interface.

foldgate acts as an OAuth client of upstream MCP servers. What it obtains there — access and refresh
tokens, the client registration it made, the PKCE state of a consent in flight — is kept here, keyed
by (tenant, server, subject). ``subject`` is ``SHARED`` for a connection the whole tenant uses (the
``oauth`` and ``client_credentials`` kinds) and the inbound principal's subject for ``per_user``.

Secrets never leave a backend in clear except through :meth:`GrantStore.get_grant`,
:meth:`GrantStore.get_client` and :meth:`GrantStore.take_pending`; every backend encrypts token
material at rest with a :class:`GrantCipher` (AES-GCM under a local key file, or a KMS envelope in
the cloud), binding the ciphertext to its key so a row copied onto another (tenant, server, subject)
does not decrypt.
Listing returns :class:`GrantSummary` only: state and expiry, never a token.

An authorization server may forget the client foldgate registered with it (a restart with an
in-memory store, an administrator, an expired secret). :meth:`GrantStore.claim_client` and
:meth:`GrantStore.replace_client` are conditional writes keyed on the old ``client_id``, so of several
instances that notice, one registers again and the others re-read its registration.

Several warm instances may refresh the same grant at once. A refresh server that rotates refresh
tokens invalidates the old one on first use, so the writer that lost the race must not overwrite the
winner's rotated token with its own (now useless) one: :meth:`GrantStore.put_grant` is a conditional
write on ``version`` and the loser re-reads.

A tenant's own private keys (its DPoP key, RFC 9449) live here too, sealed like the tokens they bind:
:meth:`GrantStore.add_key` writes only where none is stored, so instances racing to make the first
key end up sharing one.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "SHARED",
    "ClientRegistration",
    "GrantCipher",
    "GrantState",
    "GrantStore",
    "GrantSummary",
    "PendingConsent",
    "PendingPurpose",
    "UpstreamGrant",
]

# The subject of a connection shared by every principal of a tenant.
SHARED = "*"

GrantState = Literal["connected", "expired", "needs_consent"]
# What a pending code flow completes: an upstream consent, or the sign-in at the tenant's own issuer
# that must come before a per-user consent (its callback is another route).
PendingPurpose = Literal["consent", "login"]


@dataclass(frozen=True, slots=True)
class UpstreamGrant:
    """Tokens for one (tenant, server, subject), as obtained from the upstream's authorization server.

    ``version`` is the store's write counter: 0 for a grant never stored; ``put_grant`` succeeds only
    when the stored version still equals the one read. ``state`` is ``needs_consent`` after the
    authorization server refused the refresh token (revoked grant): callers stop refreshing and ask
    for consent again instead of looping.
    """

    tenant: str
    server: str
    subject: str
    # Secrets stay out of repr: a grant in a log line or a traceback must not print its tokens.
    access_token: str = field(repr=False)
    token_type: str = "Bearer"
    refresh_token: str | None = field(default=None, repr=False)
    expires_at: float | None = None  # epoch seconds; None when the server did not say
    scope: str | None = None
    issuer: str | None = None  # the authorization server that issued it
    resource: str | None = None  # the RFC 8707 resource the token is bound to
    state: GrantState = "connected"
    updated_at: float = 0.0
    version: int = 0
    # The OAuth client the tokens were issued to: a refresh token is bound to it (RFC 6749 6), so a
    # grant of a client foldgate no longer uses needs consent again. None: issued before this was kept.
    client_id: str | None = None
    # Why the grant needs consent, in foldgate's own words (never text from the authorization server).
    reason: str | None = None
    # When foldgate received the access token (epoch seconds): its lifetime sets the refresh margin.
    # None: stored before this was kept (``updated_at`` stands in).
    issued_at: float | None = None
    # A step-up pending: the scope the next consent asks for (held plus what one tool's 403 named).
    # The grant stays usable meanwhile for what its scope allows.
    step_up: str | None = None

    def consent_scope(self) -> str | None:
        """The extra scope the next consent for this grant asks for (None: the configured one)."""
        if self.step_up:
            return self.step_up
        return self.scope if self.state == "needs_consent" else None


@dataclass(frozen=True, slots=True)
class GrantSummary:
    """What the admin API and console may show of a grant: never a token."""

    tenant: str
    server: str
    subject: str
    state: GrantState
    expires_at: float | None
    scope: str | None
    updated_at: float
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ClientRegistration:
    """The OAuth client foldgate registered (RFC 7591) or was given, at one authorization server."""

    tenant: str
    server: str
    issuer: str
    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    token_endpoint_auth_method: str = "none"
    redirect_uris: tuple[str, ...] = ()
    # The server's full answer (it may hold a registration access token: not in repr either).
    registration: dict[str, object] = field(default_factory=dict, repr=False)
    # When foldgate registered it (epoch seconds; 0: unknown, stored before this was kept).
    registered_at: float = 0.0
    # Set by the store when an instance claimed the re-registration of this (forgotten) client: from
    # then on the registration is not used, and only the claimer registers until the claim lapses.
    claimed_at: float | None = None


@dataclass(frozen=True, slots=True)
class PendingConsent:
    """A code flow in progress, addressed by its ``state`` parameter; single use, short-lived."""

    state: str
    tenant: str
    server: str
    subject: str
    code_verifier: str = field(repr=False)
    redirect_uri: str
    issuer: str
    resource: str | None
    scope: str | None
    expires_at: float
    return_to: str | None = None
    # SHA-256 (hex) of the browser cookie the flow was started from: the callback must present that
    # cookie. None for an operator's connect (the admin API hands the URL to an authenticated operator).
    browser: str | None = None
    purpose: PendingPurpose = "consent"
    nonce: str | None = field(default=None, repr=False)  # the OpenID Connect nonce of a sign-in


class GrantCipher(ABC):
    """Authenticated encryption of token material, bound to the row it belongs to."""

    @abstractmethod
    def encrypt(self, plaintext: bytes, *, context: str) -> bytes:
        """Seal ``plaintext``; ``context`` (e.g. ``tenant/server/subject``) is authenticated, not stored."""

    @abstractmethod
    def decrypt(self, sealed: bytes, *, context: str) -> bytes:
        """Open what :meth:`encrypt` sealed under the same context; raises StoreError if tampered."""


class GrantStore(ABC):
    """Upstream grants, client registrations and pending consents, encrypted at rest."""

    @abstractmethod
    def get_grant(self, tenant: str, server: str, subject: str) -> UpstreamGrant | None:
        """The grant, decrypted; None when there is none."""

    @abstractmethod
    def put_grant(self, grant: UpstreamGrant) -> UpstreamGrant | None:
        """Store ``grant`` if the stored version still equals ``grant.version`` (0: none stored).

        Returns the stored grant with its new version and ``updated_at`` (the store's write time),
        or None when another writer got there first (the caller re-reads with :meth:`get_grant` and
        uses the winner's tokens).
        """

    @abstractmethod
    def delete_grant(self, tenant: str, server: str, subject: str) -> bool:
        """Forget the grant (disconnect); True if there was one."""

    @abstractmethod
    def list_grants(self, tenant: str, server: str | None = None) -> list[GrantSummary]:
        """Summaries of a tenant's grants (of one server, when given)."""

    @abstractmethod
    def get_client(self, tenant: str, server: str, issuer: str) -> ClientRegistration | None:
        """The client registered for this server at ``issuer``, if any."""

    @abstractmethod
    def put_client(self, client: ClientRegistration) -> None:
        """Remember a client registration (overwrites; registrations are idempotent to redo)."""

    @abstractmethod
    def replace_client(self, client: ClientRegistration, *, previous: str | None) -> bool:
        """Store ``client`` only if the stored registration's ``client_id`` is still ``previous``
        (None: none stored); the write clears any claim. False when another instance got there first
        (the caller re-reads with :meth:`get_client` and uses the winner's)."""

    @abstractmethod
    def claim_client(self, client: ClientRegistration, *, lease_s: float) -> bool:
        """Claim the re-registration of the stored ``client`` (the authorization server forgot it):
        succeeds only while its ``client_id`` is still stored and no other claim younger than
        ``lease_s`` holds, so of several instances exactly one registers again. Stamps
        ``claimed_at`` with the store's clock."""

    @abstractmethod
    def get_key(self, tenant: str, name: str) -> str | None:
        """The tenant's private key ``name`` (PEM), opened; None when none is stored."""

    @abstractmethod
    def add_key(self, tenant: str, name: str, pem: str) -> bool:
        """Store the key ``name`` only where none is stored (a conditional write); False when another
        writer stored one first (the caller reads it back with :meth:`get_key` and uses that one)."""

    @abstractmethod
    def put_pending(self, pending: PendingConsent) -> None:
        """Remember a code flow in progress until its ``expires_at``."""

    @abstractmethod
    def take_pending(self, state: str) -> PendingConsent | None:
        """Remove and return the pending consent for ``state``; None if unknown, used or expired."""

    @abstractmethod
    def use_link(self, nonce: str, expires_at: float) -> bool:
        """Mark the connect link ``nonce`` used, kept until ``expires_at`` (the link's own expiry):
        True the first time, False for every later use, on any instance (a conditional write)."""

    @abstractmethod
    def link_used(self, nonce: str) -> bool:
        """Whether :meth:`use_link` spent ``nonce`` already (a read, for the page a used link shows)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
