"""Which client foldgate is at an authorization server, by the spec's preference: a configured
pre-registered client first, then a Client ID Metadata Document (only where the server supports it and
foldgate's public URL is https), then a stored dynamic registration; each refusal says what to fix."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.auth import OAuthMetadata

from foldgate.config.upstream_auth import OAuthAuth
from foldgate.errors import ConfigError, UpstreamError
from foldgate.store.grants.base import ClientRegistration
from foldgate.store.grants.cipher import LocalKeyCipher
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth.discovery import Discovered
from foldgate.upstream.oauth.registration import application_type, client_for, client_metadata_document

ISSUER = "https://as.example.com"
PUBLIC = "https://gw.example.com"
REDIRECT = PUBLIC + "/oauth/callback"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    grants = SqliteGrantStore(tmp_path / "g.sqlite3", LocalKeyCipher.from_file(tmp_path / "g.key"))
    yield grants
    grants.close()


def found(**metadata: Any) -> Discovered:
    doc = {
        "issuer": ISSUER,
        "authorization_endpoint": ISSUER + "/authorize",
        "token_endpoint": ISSUER + "/token",
    }
    return Discovered(
        "https://mcp.example.com/mcp", ISSUER, OAuthMetadata.model_validate({**doc, **metadata}), None
    )


async def no_secret(name: str) -> str:
    raise ConfigError(f"no secret {name}")


async def secret(name: str) -> str:
    return f"value-of-{name}"


async def choose(store: SqliteGrantStore, auth: OAuthAuth, where: Discovered, public: str | None = PUBLIC,
                 read: Any = no_secret) -> ClientRegistration:  # fmt: skip
    return await client_for(store, auth, where, tenant="t", server="s", redirect_uri=REDIRECT,
                            public_url=public, read_secret=read, allow_private=False)  # fmt: skip


async def test_a_preregistered_client_wins_and_reads_its_secret(store: SqliteGrantStore) -> None:
    auth = OAuthAuth(client_id="fg", client_secret_secret="/fg/s")
    where = found(
        client_id_metadata_document_supported=True,
        token_endpoint_auth_methods_supported=["client_secret_post"],
    )
    chosen = await choose(store, auth, where, read=secret)
    assert (chosen.client_id, chosen.client_secret) == ("fg", "value-of-/fg/s")
    assert chosen.token_endpoint_auth_method == "client_secret_post"  # what the server supports


async def test_a_pinned_preregistered_client_is_used_at_its_own_issuer(store: SqliteGrantStore) -> None:
    auth = OAuthAuth(client_id="fg", client_secret_secret="/fg/s", issuer=ISSUER + "/")
    chosen = await choose(store, auth, found(), read=secret)
    assert (chosen.client_id, chosen.client_secret, chosen.issuer) == ("fg", "value-of-/fg/s", ISSUER)


async def test_a_pinned_preregistered_client_is_never_offered_to_another_issuer(
    store: SqliteGrantStore,
) -> None:
    # The upstream names an authorization server of its choosing: the client's secret is not even read.
    auth = OAuthAuth(client_id="fg", client_secret_secret="/fg/s", issuer="https://login.example.org")
    with pytest.raises(UpstreamError, match=r"not 'https://login\.example\.org'.*nothing was sent"):
        await choose(store, auth, found(), read=no_secret)


def test_an_issuer_pin_needs_a_preregistered_client() -> None:
    with pytest.raises(ValueError, match="needs a client_id"):
        OAuthAuth(issuer=ISSUER)


async def test_cimd_when_the_server_supports_it_and_foldgate_is_public_https(store: SqliteGrantStore) -> None:
    chosen = await choose(store, OAuthAuth(), found(client_id_metadata_document_supported=True))
    assert chosen.client_id == PUBLIC + "/oauth/client-metadata.json"
    assert chosen.token_endpoint_auth_method == "none"
    assert store.get_client("t", "s", ISSUER) is None  # nothing registered, nothing stored


async def test_no_cimd_on_a_plain_http_public_url(store: SqliteGrantStore) -> None:
    auth = OAuthAuth(registration="cimd")
    with pytest.raises(UpstreamError, match="public https URL"):
        await choose(
            store, auth, found(client_id_metadata_document_supported=True), public="http://127.0.0.1:8080"
        )


async def test_a_stored_registration_for_the_same_redirect_is_reused(store: SqliteGrantStore) -> None:
    kept = ClientRegistration("t", "s", ISSUER, "dcr-1", redirect_uris=(REDIRECT,))
    store.put_client(kept)
    chosen = await choose(store, OAuthAuth(), found(registration_endpoint=ISSUER + "/register"))
    assert chosen.client_id == "dcr-1"


async def test_no_way_to_register_says_what_to_configure(store: SqliteGrantStore) -> None:
    with pytest.raises(UpstreamError, match="pre-registered client_id"):
        await choose(store, OAuthAuth(), found())


def test_the_cimd_document_is_a_public_client_with_foldgates_callback() -> None:
    doc = client_metadata_document(PUBLIC + "/")
    assert doc["client_id"] == PUBLIC + "/oauth/client-metadata.json"
    assert doc["redirect_uris"] == [REDIRECT]
    assert doc["grant_types"] == ["authorization_code", "refresh_token"]


@pytest.mark.parametrize(
    ("redirect", "kind"),
    [
        ("https://gateway.example.com/oauth/callback", "web"),
        ("http://127.0.0.1:8080/oauth/callback", "native"),
        ("http://localhost:9000/oauth/callback", "native"),
        ("http://[::1]:9000/oauth/callback", "native"),
    ],
)
def test_application_type_follows_the_redirect(redirect: str, kind: str) -> None:
    """SEP-837: a deployed gateway's https callback is a web client's; a loopback one (OIDC forbids it
    to web clients) a native client's."""
    assert application_type(redirect) == kind


def test_the_cimd_document_says_it_is_a_web_client() -> None:
    assert client_metadata_document(PUBLIC)["application_type"] == "web"
