"""The ``id_jag`` kind (SEP-990) against a loopback IdP and upstream authorization server that verify
what they are sent (tests.upstreams.enterprise).

Pins: the exact form of both requests (RFC 8693 at the IdP: id_token subject, id-jag requested, the
upstream AS's issuer as audience, exactly the PRM's resource; RFC 7523 at the AS with
``client_secret_basic``, the client id and secret URL-encoded); no dynamic registration although the
AS offers it; a token per person, cached until its margin before expiry, never another person's; a
refusal is one ``upstream_needs_authorization`` error naming the IdP's or the AS's answer; a 401
drops the token and the next attempt exchanges again; an ID-JAG for another client is never sent; the
AS pin; listing without a person; the inbound token and the ID-JAG appear in no log line or error.
Through the real upstream client to the MCP SDK's resource server (demo/oauth/protected_mcp.py): each
person's call runs upstream as that person, and a token the upstream refuses (expired early) is
dropped and the call sent once more with a freshly exchanged one.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamAuthorizationError, UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller, calling_as, presenting
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.client import UpstreamClient
from foldgate.upstream.declared import declared_listing
from foldgate.upstream.oauth import exchanged, held
from foldgate.upstream.oauth.provider import TokenProvider
from tests.upstream_oauth import oauth_context, protected_server
from tests.upstreams.enterprise import (
    CLIENT_ID,
    CLIENT_SECRET,
    ID_JAG_TYPE,
    ID_TOKEN_TYPE,
    JWT_BEARER,
    Enterprise,
)

TENANT = "acme"
SECRETS = {"/fg/upstream-client": CLIENT_SECRET}


def server_config(ent: Enterprise, **auth: Any) -> ServerConfig:
    block = {"kind": "id_jag", "idp": {"token_url": ent.base + "/idp/token", "client_id": "foldgate-at-idp"},
             "client_id": CLIENT_ID, "client_secret_secret": "/fg/upstream-client", **auth}  # fmt: skip
    return parse_tenant_config({"servers": [{"name": "files", "url": ent.url, "auth": block}]}).servers[0]


def person(ent: Enterprise, name: str) -> UpstreamCaller:
    return UpstreamCaller(TENANT, f"oauth:{name}", ent.id_token(name))


def provider(store: SqliteGrantStore, secrets: dict[str, str] = SECRETS) -> TokenProvider:
    return TokenProvider(oauth_context(store, secrets))


async def test_an_inbound_subject_goes_typed_as_the_access_token_it_was_verified_as(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    # foldgate's inbound OAuth verifies access tokens: untyped, the inbound identity is sent as one
    # (a strict IdP refuses an access token announced as an ID token).
    await provider(store).authorization(server_config(ent), person(ent, "alice"))
    [form] = ent.posted("/idp/token")
    assert form["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token"


async def test_the_idp_and_the_authorization_server_get_exactly_the_sep_990_requests(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    alice = person(ent, "alice")
    # This IdP's people sign in to foldgate with their ID token: the config says so.
    config = server_config(ent, subject_token={"inbound": True, "type": "id_token"})
    assert await provider(store).authorization(config, alice) == "Bearer at-alice-2"
    assert ent.posted("/idp/token") == [
        {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": ID_JAG_TYPE,
            "audience": ent.issuer,
            "resource": ent.url,
            "scope": "files:read",
            "subject_token": alice.inbound_token,
            "subject_token_type": ID_TOKEN_TYPE,
            "client_id": "foldgate-at-idp",
        }
    ]
    [(_path, form, basic)] = [post for post in ent.posts if post[0] == "/as/token"]
    assert set(form) == {"grant_type", "assertion", "resource", "scope"}
    assert (form["grant_type"], form["resource"], form["scope"]) == (JWT_BEARER, ent.url, "files:read")
    # client_secret_basic, each part URL-encoded first (RFC 6749 section 2.3.1): the secret has ':' and '/'.
    pair = f"{quote(CLIENT_ID, safe='')}:{quote(CLIENT_SECRET, safe='')}"
    assert basic == "Basic " + base64.b64encode(pair.encode()).decode()
    # Dynamic registration is offered and never used; nothing else was posted.
    assert [p for p, _, _ in ent.posts] == ["/idp/token", "/as/token"]


async def test_each_person_gets_their_own_token_cached_and_never_another_ones(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    tokens = provider(store)
    server = server_config(ent)
    alice, bob = person(ent, "alice"), person(ent, "bob")
    first = await tokens.authorization(server, alice)
    assert await tokens.authorization(server, bob) != first
    assert (await tokens.authorization(server, bob)).startswith("Bearer at-bob-")
    assert await tokens.authorization(server, alice) == first  # held: no exchange
    assert len(ent.posted("/as/token")) == tokens.exchanged.exchanges == 2
    # A subject without an inbound identity (an agent token's) and no token held never gets anyone's.
    with pytest.raises(UpstreamAuthorizationError, match="inbound OAuth identity"):
        await tokens.authorization(server, UpstreamCaller(TENANT, "fgt-token-id"))
    assert len(ent.posted("/idp/token")) == 2


async def test_a_token_is_exchanged_again_once_its_margin_before_expiry_is_reached(
    ent: Enterprise, store: SqliteGrantStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    ent.expires_in = 40  # margin: a quarter of the lifetime, 10 s
    tokens = provider(store)
    server, alice = server_config(ent), person(ent, "alice")
    clock = SimpleNamespace(now=1.0e9)
    # One clock for when a token is received (exchanged) and when it is judged (held).
    for module in (exchanged, held):
        monkeypatch.setattr(module, "time", SimpleNamespace(time=lambda: clock.now))
    first = await tokens.authorization(server, alice)
    clock.now += 29
    assert await tokens.authorization(server, alice) == first
    clock.now += 2  # 31 s: within 10 s of expiry
    assert await tokens.authorization(server, alice) != first
    assert len(ent.posted("/idp/token")) == 2


async def test_a_refusal_by_the_idp_is_one_clear_error_and_no_retry(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    ent.denied.add("mallory")
    tokens, server = provider(store), server_config(ent)
    with pytest.raises(
        UpstreamAuthorizationError, match=r"the enterprise IdP refused.*access_denied"
    ) as caught:
        await tokens.authorization(server, person(ent, "mallory"))
    assert caught.value.code == "upstream_needs_authorization"
    assert isinstance(caught.value, UpstreamConsentError)  # the indexer's declared-tools fallback
    assert [p for p, _, _ in ent.posts] == ["/idp/token"]  # once; the AS never saw anything


async def test_a_refusal_by_the_upstream_authorization_server_names_it(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    ent.as_error = "invalid_grant"
    with pytest.raises(
        UpstreamAuthorizationError, match=r"upstream's authorization server refused.*invalid_grant"
    ):
        await provider(store).authorization(server_config(ent), person(ent, "alice"))
    assert [p for p, _, _ in ent.posts] == ["/idp/token", "/as/token"]


async def test_a_401_drops_the_token_and_the_next_attempt_exchanges_again(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    tokens, server, alice = provider(store), server_config(ent), person(ent, "alice")
    refused = await tokens.authorization(server, alice)
    await tokens.refused(server, alice, refused, 401, None)
    fresh = await tokens.authorization(server, alice)
    assert fresh != refused
    # A late 401 for the old token leaves the fresh one alone.
    await tokens.refused(server, alice, refused, 401, None)
    assert await tokens.authorization(server, alice) == fresh
    with pytest.raises(UpstreamError, match="HTTP 403"):
        await tokens.refused(server, alice, fresh, 403, 'Bearer error="insufficient_scope", scope="x"')
    assert len(ent.posted("/idp/token")) == 2


async def test_an_id_jag_for_another_client_is_never_sent(ent: Enterprise, store: SqliteGrantStore) -> None:
    ent.jag_client_id = "someone-else"
    with pytest.raises(UpstreamAuthorizationError, match=r"'someone-else'.*map that client"):
        await provider(store).authorization(server_config(ent), person(ent, "alice"))
    assert ent.posted("/as/token") == []


async def test_an_upstream_naming_another_authorization_server_than_the_pin_gets_nothing(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    server = server_config(ent, issuer="https://as.example.com")
    with pytest.raises(UpstreamError, match="not the configured issuer"):
        await provider(store).authorization(server, person(ent, "alice"))
    assert ent.posts == []


async def test_the_indexer_lists_with_the_listing_subject_token_or_the_declared_tools(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    indexer = UpstreamCaller(TENANT, SHARED_SUBJECT)
    declared = server_config(ent, tools=[{"name": "read_file", "description": "Read a file."}])
    with pytest.raises(UpstreamConsentError, match="declare its tools"):
        await provider(store).authorization(declared, indexer)
    listing = declared_listing(declared)
    assert listing is not None
    assert [t["name"] for t in listing.tools] == ["read_file"]
    assert ent.posts == []
    listed = server_config(ent, listing_subject_token={"secret": "/fg/lister"})
    secrets = {**SECRETS, "/fg/lister": ent.id_token("indexer-bot")}
    assert (await provider(store, secrets).authorization(listed, indexer)).startswith(
        "Bearer at-indexer-bot-"
    )


async def test_a_configured_subject_token_is_the_tenants_one_identity(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    server = server_config(ent, subject_token={"secret": "/fg/id-token", "type": "id_token"})
    tokens = provider(store, {**SECRETS, "/fg/id-token": ent.id_token("service")})
    first = await tokens.authorization(server, UpstreamCaller(TENANT, "oauth:alice"))
    assert first.startswith("Bearer at-service-")
    assert await tokens.authorization(server, UpstreamCaller(TENANT, SHARED_SUBJECT)) == first


async def test_neither_the_inbound_token_nor_the_id_jag_reaches_a_log_line_or_an_error(
    ent: Enterprise, store: SqliteGrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tokens, server = provider(store), server_config(ent)
    alice = person(ent, "alice")
    granted = await tokens.authorization(server, alice)
    [assertion] = [form["assertion"] for form in ent.posted("/as/token")]
    messages = [str(exc) for exc in await _errors(ent, tokens, server)]
    canaries = [alice.inbound_token or "", assertion, granted.removeprefix("Bearer ")]
    assert all(canary not in caplog.text for canary in canaries)
    assert all(canary not in message for canary in canaries for message in messages)
    assert alice.inbound_token not in repr(alice)


async def _errors(ent: Enterprise, tokens: TokenProvider, server: ServerConfig) -> list[Exception]:
    """The errors of a refused IdP step, a refused AS step and a client mismatch, for alice."""
    found: list[Exception] = []
    for setup in ("denied", "as_error", "client"):
        ent.denied, ent.as_error, ent.jag_client_id = set(), None, CLIENT_ID
        if setup == "denied":
            ent.denied = {"alice"}
        elif setup == "as_error":
            ent.as_error = "invalid_grant"
        else:
            ent.jag_client_id = "other"
        tokens.exchanged = exchanged.ExchangedTokens(tokens.ctx, lambda issued, expires: 60.0)
        try:
            await tokens.authorization(server, person(ent, "alice"))
        except UpstreamError as exc:
            found.append(exc)
    assert len(found) == 3
    return found


async def test_through_the_upstream_client_each_person_calls_as_themselves_and_a_refused_token_is_replaced(
    ent: Enterprise, store: SqliteGrantStore, tmp_path: Path
) -> None:
    ent.signed = True
    with protected_server(tmp_path, ent.issuer) as (url, calls):
        ent.resources.add(url)
        server = parse_tenant_config({"servers": [{"name": "files", "url": url, "auth": {
            "kind": "id_jag", "idp": {"token_url": ent.base + "/idp/token"}, "client_id": CLIENT_ID,
            "client_secret_secret": "/fg/upstream-client"}}]}).servers[0]  # fmt: skip
        client = UpstreamClient(allow_private=True, auth=provider(store))

        async def whoami(name: str) -> str:
            presenting(ent.id_token(name))  # as the edge does for a request it verified
            with calling_as(TENANT, f"oauth:{name}"):
                result = await client.call_tool(server, "whoami", {})
            assert not result.get("isError"), result
            return str(json.loads(result["content"][0]["text"])["subject"])

        try:
            assert [await whoami("alice"), await whoami("bob"), await whoami("alice")] == [
                "alice",
                "bob",
                "alice",
            ]
            assert len(ent.posted("/as/token")) == 2  # alice's token was held
            # The AS announces an hour but the token dies in a second (revoked, a clock): the upstream's
            # 401 drops it, and the call goes once more with a fresh exchange.
            ent.jwt_lifetime = 2
            assert await whoami("carol") == "carol"
            # 3, or 4 when a loaded machine took past the 2 s to open the session (that 401 too was
            # answered with one fresh exchange).
            exchanged = len(ent.posted("/as/token"))
            assert exchanged in (3, 4)
            await asyncio.sleep(3.2)
            assert await whoami("carol") == "carol"
            assert len(ent.posted("/as/token")) == exchanged + 1
        finally:
            await client.aclose()
        ran = [json.loads(line)["subject"] for line in calls.read_text().splitlines()]
        assert ran == ["alice", "bob", "alice", "carol", "carol"]


async def test_an_error_code_echoing_a_credential_never_reaches_the_error(
    ent: Enterprise, store: SqliteGrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    # A hostile IdP or AS may put what it was sent (a short opaque subject token, the client secret)
    # in the RFC 6749 ``error`` field: only a well-formed code that echoes nothing is kept.
    caplog.set_level(logging.DEBUG)
    subject = "canarysubjecttoken"  # lowercase, like an error code: only the echo check catches it
    ent.subject_of = lambda token: "svc"  # type: ignore[method-assign]
    server = server_config(ent, subject_token={"secret": "/fg/subject"})
    tokens = provider(store, {**SECRETS, "/fg/subject": subject})
    answers = {
        "/idp/token": (400, {"error": subject}),
        "/as/token": (400, {"error": CLIENT_SECRET}),
    }
    original = ent.answer
    for path, answer in answers.items():
        ent.answer = lambda p, f, a, path=path, answer=answer: (  # type: ignore[method-assign]
            answer if p == path else original(p, f, a)
        )
        with pytest.raises(UpstreamError) as caught:
            await tokens.authorization(server, UpstreamCaller(TENANT, SHARED_SUBJECT))
        for canary in (subject, CLIENT_SECRET):
            assert canary not in str(caught.value)
            assert canary not in repr(caught.value.__dict__)
    assert subject not in caplog.text
    assert CLIENT_SECRET not in caplog.text


@pytest.mark.parametrize(
    "grant",
    [
        "not-a-jwt",
        "claims-without-client-id",
        "for-another-audience",
    ],
)
async def test_an_id_jag_that_is_not_a_jwt_for_this_client_and_server_is_never_sent(
    ent: Enterprise, store: SqliteGrantStore, grant: str
) -> None:
    # The client secret and the ID-JAG go to the upstream's AS only for an ID-JAG the IdP issued to
    # foldgate's client there, for that very server (SEP-990: client_id and aud are required claims).
    original = ent.answer
    server = server_config(ent)

    def answer(path: str, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        status, body = original(path, form, authorization)
        if path != "/idp/token":
            return status, body
        claims = exchanged_claims(body["access_token"])
        if grant == "not-a-jwt":
            body["access_token"] = "opaque-grant-" + claims["sub"]
        elif grant == "claims-without-client-id":
            del claims["client_id"]
            body["access_token"] = sign_jag(claims)
        else:
            claims["aud"] = "https://another-as.example.com"
            body["access_token"] = sign_jag(claims)
        return status, body

    ent.answer = answer  # type: ignore[method-assign]
    with pytest.raises(UpstreamError, match="ID-JAG"):
        await provider(store).authorization(server, person(ent, "alice"))
    assert ent.posted("/as/token") == []


def exchanged_claims(grant: str) -> dict[str, Any]:
    import jwt

    return dict(jwt.decode(grant, options={"verify_signature": False}))


def sign_jag(claims: dict[str, Any]) -> str:
    import jwt

    from tests.upstreams.enterprise import IDP_KEY

    return jwt.encode(claims, IDP_KEY, algorithm="HS256", headers={"typ": "oauth-id-jag+jwt"})


@pytest.mark.parametrize("expires_in", [None, 0, 10**400], ids=["absent", "zero", "absurd"])
async def test_a_token_of_no_zero_or_absurd_lifetime_is_held_for_a_bounded_time(
    ent: Enterprise, store: SqliteGrantStore, monkeypatch: pytest.MonkeyPatch, expires_in: int | None
) -> None:
    # Revocation at the IdP takes effect at the next exchange: a token the AS gave no (or a zero, or an
    # absurd) lifetime is not held until the process ends.
    ent.expires_in = expires_in
    tokens, server, alice = provider(store), server_config(ent), person(ent, "alice")
    clock = SimpleNamespace(now=1.0e9)
    # One clock for when a token is received (exchanged) and when it is judged (held).
    for module in (exchanged, held):
        monkeypatch.setattr(module, "time", SimpleNamespace(time=lambda: clock.now))
    first = await tokens.authorization(server, alice)
    clock.now += exchanged.MAX_HOLD_S + 1
    assert await tokens.authorization(server, alice) != first
    assert len(ent.posted("/as/token")) == 2


async def test_a_403_whose_scope_echoes_the_token_never_prints_it(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    # A hostile upstream may hand the token it was sent back as the scope its 403 asks for.
    tokens, server, alice = provider(store), server_config(ent), person(ent, "alice")
    sent = await tokens.authorization(server, alice)
    token = sent.removeprefix("Bearer ")
    with pytest.raises(UpstreamError, match="HTTP 403") as caught:
        await tokens.refused(server, alice, sent, 403, f'Bearer error="insufficient_scope", scope="{token}"')
    assert token not in str(caught.value)
