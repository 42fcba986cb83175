"""The ``token_exchange`` kind (RFC 8693 on-behalf-of) against a loopback authorization server that
verifies the subject token (tests.upstreams.enterprise's IdP, acting as the AS the upstream trusts).

Pins: the exact form (the person's inbound token as subject, its type, the requested type, the
upstream's PRM resource by default, audience, scope, the actor token and its type) and
``client_secret_basic``; a token per person, cached; a refusal is one ``upstream_needs_authorization``
error naming the server's answer; the issuer found by discovery; the inbound token in no log or error.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamAuthorizationError
from foldgate.model.caller import UpstreamCaller
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth.provider import TokenProvider
from tests.upstream_oauth import oauth_context
from tests.upstreams.enterprise import ACCESS_TOKEN_TYPE, EXCHANGE, ID_TOKEN_TYPE, Enterprise

JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"

TENANT = "acme"
SECRETS = {"/fg/obo": "obo-secret", "/fg/actor": "actor-token-of-foldgate"}


def server_config(ent: Enterprise, **auth: Any) -> ServerConfig:
    block = {"kind": "token_exchange", "token_url": ent.base + "/idp/token", "client_id": "foldgate",
             "client_secret_secret": "/fg/obo", **auth}  # fmt: skip
    return parse_tenant_config({"servers": [{"name": "files", "url": ent.url, "auth": block}]}).servers[0]


def person(ent: Enterprise, name: str) -> UpstreamCaller:
    return UpstreamCaller(TENANT, f"oauth:{name}", ent.id_token(name))


async def test_the_exchange_sends_exactly_the_rfc_8693_form_with_the_persons_token(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    alice = person(ent, "alice")
    server = server_config(
        ent, audience="files-api", scopes=["files:read"], actor_token={"secret": "/fg/actor"}
    )
    assert (
        await TokenProvider(oauth_context(store, SECRETS)).authorization(server, alice)
        == "Bearer obo-alice-1"
    )
    [(_path, form, basic)] = ent.posts
    assert form == {
        "grant_type": EXCHANGE,
        "subject_token": alice.inbound_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "requested_token_type": ACCESS_TOKEN_TYPE,
        "audience": "files-api",
        "resource": ent.url,  # the upstream's protected resource metadata names it
        "scope": "files:read",
        "actor_token": "actor-token-of-foldgate",
        "actor_token_type": ACCESS_TOKEN_TYPE,
    }
    assert basic == "Basic " + base64.b64encode(b"foldgate:obo-secret").decode()


async def test_each_person_is_exchanged_as_themselves_and_a_refusal_is_surfaced_once(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    ent.denied.add("mallory")
    tokens, server = TokenProvider(oauth_context(store, SECRETS)), server_config(ent)
    alice = await tokens.authorization(server, person(ent, "alice"))
    assert (await tokens.authorization(server, person(ent, "bob"))).startswith("Bearer obo-bob-")
    assert await tokens.authorization(server, person(ent, "alice")) == alice
    with pytest.raises(UpstreamAuthorizationError, match=r"authorization server refused.*access_denied"):
        await tokens.authorization(server, person(ent, "mallory"))
    assert len(ent.posts) == 3


async def test_the_issuer_is_found_by_discovery_and_a_public_client_sends_its_id(
    ent: Enterprise, store: SqliteGrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server = parse_tenant_config({"servers": [{"name": "files", "url": ent.url, "auth": {
        "kind": "token_exchange", "issuer": ent.base + "/idp", "client_id": "public-foldgate",
        "resource": "https://files.example.com/"}}]}).servers[0]  # fmt: skip
    alice = person(ent, "alice")
    tokens = TokenProvider(oauth_context(store))
    granted = await tokens.authorization(server, alice)
    await tokens.authorization(server, person(ent, "bob"))
    assert ent.gets.count("/.well-known/oauth-authorization-server/idp") == 1  # discovered once
    [(path, form, basic), _] = ent.posts
    assert (path, basic, form["client_id"], form["resource"]) == (
        "/idp/token",
        None,
        "public-foldgate",
        "https://files.example.com/",
    )
    assert alice.inbound_token not in caplog.text
    assert granted.removeprefix("Bearer ") not in caplog.text


async def test_without_a_client_nothing_names_one(ent: Enterprise, store: SqliteGrantStore) -> None:
    server = parse_tenant_config({"servers": [{"name": "files", "url": ent.url, "auth": {
        "kind": "token_exchange", "token_url": ent.base + "/idp/token"}}]}).servers[0]  # fmt: skip
    assert (await TokenProvider(oauth_context(store)).authorization(server, person(ent, "alice"))).startswith(
        "Bearer obo-alice-"
    )
    [(_, form, basic)] = ent.posts
    assert basic is None
    assert "client_id" not in form


async def test_every_exchange_is_a_machine_grant_outcome_with_no_person_or_token(
    ent: Enterprise, store: SqliteGrantStore
) -> None:
    """The exchange kinds report through the machine grants' outcomes: the status shows the latest
    exchange (refused: the code), each one is an ``upstream.grant`` audit event; no person's token, no
    access token, no subject in either."""
    from foldgate.edge.grant_status import machine_state
    from tests.recorders import ListRecorder

    ent.denied.add("mallory")
    ctx = oauth_context(store, SECRETS)
    recorder = ListRecorder()
    ctx.outcomes.recorder = recorder
    tokens, server = TokenProvider(ctx), server_config(ent)
    alice = person(ent, "alice")
    granted = await tokens.authorization(server, alice)
    assert machine_state(ctx, None, TENANT, server)["state"] == "obtained"
    with pytest.raises(UpstreamAuthorizationError):
        await tokens.authorization(server, person(ent, "mallory"))
    state = machine_state(ctx, None, TENANT, server)
    assert (state["kind"], state["state"], state["last_grant"]["error"]) == (
        "token_exchange",
        "refused",
        "access_denied",
    )
    assert [(a.action, a.outcome, a.actor.who) for a in recorder.audits] == [
        ("upstream.grant", "ok", "token_exchange"),
        ("upstream.grant", "refused", "token_exchange"),
    ]
    said = recorder.text() + str(state)
    for secret in (granted.removeprefix("Bearer "), alice.inbound_token or "", "mallory", "alice"):
        assert secret not in said


@pytest.mark.parametrize(("requested", "urn"), [("jwt", JWT_TYPE), ("id_token", ID_TOKEN_TYPE)])
async def test_a_token_of_another_type_answered_n_a_is_accepted_and_presented_as_bearer(
    ent: Enterprise, store: SqliteGrantStore, requested: str, urn: str
) -> None:
    """RFC 8693 section 2.2.1: a token that is not an access token comes back with its
    ``issued_token_type`` and ``token_type: N_A``, the standard answer, not a malformed one. N_A names
    no presentation scheme; the configured type is what the upstream accepts, and a token bound to a
    key would say DPoP: it is presented as a bearer token (RFC 6750)."""
    server = server_config(ent, requested_token_type=requested)
    granted = await TokenProvider(oauth_context(store, SECRETS)).authorization(server, person(ent, "alice"))
    assert granted.startswith("Bearer obo-alice-")
    [(_path, form, _basic)] = ent.posts
    assert form["requested_token_type"] == urn
