"""The enterprise real parts themselves (tests/e2e/enterprise_idp/: an IdP issuing ID-JAGs, an authlib
authorization server, an MCP SDK resource server enforcing DPoP), pinned with raw HTTP before foldgate
is put in front of them: if one of these fails, the parts are wrong, not the gateway.

Pins: the IdP mints an ID-JAG of the draft's shape for alice only (bob: ``access_denied`` naming him
and the server; revoked: ``invalid_grant``), from its own ID token issued to the client or its own
access token for the gateway, nothing else; the AS trades an ID-JAG once, only for the client it names
authenticated with ``client_secret_basic``, a workload JWT with no client authentication, and a subject
token on behalf of its user; with a DPoP proof the token is bound (``DPoP``, ``cnf.jkt``) and the MCP
server accepts it only with a fresh proof from that key (Bearer, no proof, a replayed proof, another
key, another URL or token are 401); with nonces on, both servers demand theirs.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from joserfc import jwk

from tests.e2e.enterprise_idp.common import (
    ACCESS_TOKEN,
    ID_JAG,
    ID_TOKEN,
    JWT_BEARER,
    TOKEN_EXCHANGE,
    make_proof,
    new_key,
    sign,
    unverified,
)
from tests.e2e.enterprise_idp.parts import (
    IDP_CLIENT,
    IDP_SECRET,
    M2M_CLIENT,
    M2M_SECRET,
    OBO_CLIENT,
    OBO_SECRET,
    WORKLOAD,
    XAA_CLIENT,
    XAA_SECRET,
    Parts,
    enterprise_parts,
)

pytestmark = pytest.mark.e2e

GATEWAY = "http://127.0.0.1:1"  # the gateway's public URL: only an audience here, never dialled
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json",
               "mcp-protocol-version": "2025-11-25"}  # fmt: skip


@pytest.fixture(scope="module")
def parts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Parts]:
    with enterprise_parts(tmp_path_factory.mktemp("enterprise"), gateway=GATEWAY) as running:
        yield running


def exchange_at_idp(
    parts: Parts, subject_token: str, subject_type: str = ID_TOKEN, **over: Any
) -> httpx2.Response:
    form = {"grant_type": TOKEN_EXCHANGE, "requested_token_type": ID_JAG, "subject_token": subject_token,
            "subject_token_type": subject_type, "audience": parts.authorization_server, "resource": parts.mcp,
            **over}  # fmt: skip
    return httpx2.post(parts.idp + "/token", data={k: v for k, v in form.items() if v is not None},
                       auth=(IDP_CLIENT, IDP_SECRET), timeout=10)  # fmt: skip


def id_jag_for(parts: Parts, user: str) -> str:
    answer = exchange_at_idp(parts, parts.login(user)["id_token"])
    assert answer.status_code == 200, answer.text
    return str(answer.json()["access_token"])


def as_token(parts: Parts, form: dict[str, str], *, auth: tuple[str, str] | None = None,
             proof: str | None = None) -> httpx2.Response:  # fmt: skip
    headers = {"dpop": proof} if proof else {}
    return httpx2.post(
        parts.authorization_server + "/token", data=form, auth=auth, headers=headers, timeout=10
    )


def jwt_bearer(parts: Parts, assertion: str, **kwargs: Any) -> httpx2.Response:
    return as_token(parts, {"grant_type": JWT_BEARER, "assertion": assertion}, **kwargs)


class Mcp:
    """A raw Streamable HTTP session at the MCP server: every request authorised by ``authorize``."""

    def __init__(self, url: str, authorize: Any) -> None:
        self.url, self.authorize, self.session, self.next_id = url, authorize, None, 0

    def post(
        self, method: str, params: dict[str, Any] | None = None, *, notify: bool = False
    ) -> httpx2.Response:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        headers = {**MCP_HEADERS, **self.authorize("POST", self.url)}
        if self.session:
            headers["mcp-session-id"] = self.session
        response = httpx2.post(self.url, content=json.dumps(message), headers=headers, timeout=10)
        self.session = response.headers.get("mcp-session-id", self.session)
        return response

    def whoami(self) -> httpx2.Response:
        """initialize, initialized, tools/call whoami: the last answer (or the first refusal)."""
        init = self.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "raw", "version": "0"}})  # fmt: skip
        if init.status_code != 200:
            return init
        self.post("notifications/initialized", notify=True)
        return self.post("tools/call", {"name": "whoami", "arguments": {}})


def result_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC result of a JSON or SSE answer; the tool's text parsed when it is JSON."""
    assert response.status_code == 200, (response.status_code, response.headers, response.text)
    if response.headers["content-type"].startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        message = json.loads(data[-1])
    else:
        message = response.json()
    result: dict[str, Any] = message["result"]
    return json.loads(result["content"][0]["text"])


def bearer(token: str) -> Any:
    return lambda method, url: {"authorization": f"Bearer {token}"}


def dpop(token: str, key: jwk.ECKey) -> Any:
    return lambda method, url: {"authorization": f"DPoP {token}", "dpop": make_proof(key, method, url, token)}


def test_metadata_names_the_parts_and_dpop_support(parts: Parts) -> None:
    prm = httpx2.get(
        parts.mcp.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), timeout=10
    ).json()
    assert prm["resource"] == parts.mcp
    assert prm["authorization_servers"] == [parts.authorization_server]
    meta = httpx2.get(
        parts.authorization_server + "/.well-known/oauth-authorization-server", timeout=10
    ).json()
    assert meta["issuer"] == parts.authorization_server
    assert "ES256" in meta["dpop_signing_alg_values_supported"]
    assert {JWT_BEARER, TOKEN_EXCHANGE} <= set(meta["grant_types_supported"])
    refused = httpx2.get(parts.mcp, headers=MCP_HEADERS, timeout=10)
    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]


def test_the_idp_mints_an_id_jag_for_alice_of_the_drafts_shape(parts: Parts) -> None:
    answer = exchange_at_idp(parts, parts.login("alice")["id_token"], scope="files:read")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["issued_token_type"] == ID_JAG
    assert body["token_type"] == "N_A"
    header, claims = unverified(body["access_token"])
    assert header["typ"] == "oauth-id-jag+jwt"
    assert claims["iss"] == parts.idp
    assert claims["sub"] == "alice"
    assert claims["aud"] == parts.authorization_server
    assert claims["resource"] == parts.mcp
    assert claims["client_id"] == XAA_CLIENT
    assert claims["scope"] == "files:read"
    assert claims["jti"]
    assert 0 < claims["exp"] - claims["iat"] <= 300


def test_the_idp_policy_denies_bob_and_a_revoked_user(parts: Parts) -> None:
    denied = exchange_at_idp(parts, parts.login("bob")["id_token"])
    assert denied.status_code == 400
    assert denied.json()["error"] == "access_denied"
    assert "bob" in denied.json()["error_description"]
    assert parts.mcp in denied.json()["error_description"]

    tokens = parts.login("alice")
    parts.revoke("alice")
    try:
        revoked = exchange_at_idp(parts, tokens["id_token"])
        assert revoked.status_code == 400
        assert revoked.json() == {
            "error": "invalid_grant",
            "error_description": "access of alice was revoked",
        }
    finally:
        parts.restore("alice")
    assert exchange_at_idp(parts, tokens["id_token"]).status_code == 200
    outcomes = [(e["subject"], e["outcome"], e.get("error")) for e in parts.idp_log() if e.get("subject")]
    assert ("bob", "refused", "access_denied") in outcomes
    assert ("alice", "refused", "invalid_grant") in outcomes


def test_the_idp_accepts_only_its_own_tokens_meant_for_the_client(parts: Parts) -> None:
    mine = parts.login("alice")
    # The gateway's own inbound token (an access token for the gateway) is a valid subject.
    assert exchange_at_idp(parts, mine["access_token"], ACCESS_TOKEN).status_code == 200
    # Mislabelled, for another client or audience, or forged: invalid_grant.
    assert exchange_at_idp(parts, mine["access_token"], ID_TOKEN).json()["error"] == "invalid_grant"
    assert exchange_at_idp(parts, mine["id_token"], ACCESS_TOKEN).json()["error"] == "invalid_grant"
    other = parts.login("alice", client_id="someone-else", audience="https://elsewhere.example")
    assert exchange_at_idp(parts, other["id_token"]).json()["error"] == "invalid_grant"
    assert exchange_at_idp(parts, other["access_token"], ACCESS_TOKEN).json()["error"] == "invalid_grant"
    _, claims = unverified(mine["id_token"])
    forged = sign(new_key("idp-1"), claims)
    assert exchange_at_idp(parts, forged).json()["error"] == "invalid_grant"
    # Wrong target, missing resource, wrong client secret.
    assert (
        exchange_at_idp(parts, mine["id_token"], audience="https://as.example").json()["error"]
        == "invalid_target"
    )
    assert exchange_at_idp(parts, mine["id_token"], resource=None).json()["error"] == "invalid_request"
    wrong = httpx2.post(
        parts.idp + "/token", data={"grant_type": TOKEN_EXCHANGE}, auth=(IDP_CLIENT, "x"), timeout=10
    )
    assert wrong.status_code == 401


def test_the_as_trades_an_id_jag_once_for_the_named_client_and_the_server_serves_alice(parts: Parts) -> None:
    assertion = id_jag_for(parts, "alice")
    # Not with client_secret_post, not another client, not without authentication.
    post = as_token(parts, {"grant_type": JWT_BEARER, "assertion": assertion, "client_id": XAA_CLIENT,
                            "client_secret": XAA_SECRET})  # fmt: skip
    assert post.json()["error"] == "invalid_client"
    other = jwt_bearer(parts, assertion, auth=(OBO_CLIENT, OBO_SECRET)).json()
    assert other["error"] == "invalid_grant"
    assert "client_id" in other["error_description"]
    assert jwt_bearer(parts, assertion).json()["error"] == "invalid_client"
    granted = jwt_bearer(parts, assertion, auth=(XAA_CLIENT, XAA_SECRET))
    assert granted.status_code == 200, granted.text
    body = granted.json()
    assert body["token_type"] == "Bearer"
    assert "refresh_token" not in body
    _, claims = unverified(body["access_token"])
    assert (claims["sub"], claims["aud"], claims["client_id"]) == ("alice", parts.mcp, XAA_CLIENT)
    assert "cnf" not in claims
    replayed = jwt_bearer(parts, assertion, auth=(XAA_CLIENT, XAA_SECRET))
    assert replayed.json()["error"] == "invalid_grant"
    assert "jti" in replayed.json()["error_description"]

    assert result_of(Mcp(parts.mcp, bearer(body["access_token"])).whoami())["subject"] == "alice"


def test_the_as_refuses_an_id_jag_from_an_untrusted_signer_or_for_another_server(parts: Parts) -> None:
    _, claims = unverified(id_jag_for(parts, "alice"))
    forged = sign(new_key("idp-1"), {**claims, "jti": "forged"}, "oauth-id-jag+jwt")
    assert jwt_bearer(parts, forged, auth=(XAA_CLIENT, XAA_SECRET)).json()["error"] == "invalid_grant"
    # A plain JWT (no ID-JAG typ) goes to the workload grant, whose issuer is not the IdP.
    assert jwt_bearer(parts, parts.login("alice")["id_token"]).json()["error"] == "invalid_grant"


def test_the_as_trades_a_workload_jwt_without_client_authentication(parts: Parts) -> None:
    granted = jwt_bearer(parts, parts.workload_token())
    assert granted.status_code == 200, granted.text
    token = granted.json()["access_token"]
    assert result_of(Mcp(parts.mcp, bearer(token)).whoami())["subject"] == WORKLOAD
    assert [e["auth_method"] for e in parts.as_log() if e.get("subject") == WORKLOAD][-1] == "none"
    stranger = jwt_bearer(parts, parts.workload_token("spiffe://example.org/stranger"))
    assert stranger.json()["error"] == "invalid_grant"
    wrong_aud = jwt_bearer(parts, parts.workload_token(audience="https://as.example"))
    assert wrong_aud.json()["error"] == "invalid_grant"
    scoped = as_token(
        parts, {"grant_type": JWT_BEARER, "assertion": parts.workload_token(), "scope": "admin"}
    )
    assert scoped.json()["error"] == "invalid_scope"


def test_the_as_exchanges_a_users_gateway_token_on_their_behalf(parts: Parts) -> None:
    subject = parts.login("alice")["access_token"]
    form = {"grant_type": TOKEN_EXCHANGE, "subject_token": subject, "subject_token_type": ACCESS_TOKEN,
            "resource": parts.mcp}  # fmt: skip
    granted = as_token(parts, form, auth=(OBO_CLIENT, OBO_SECRET))
    assert granted.status_code == 200, granted.text
    assert granted.json()["issued_token_type"] == ACCESS_TOKEN
    who = result_of(Mcp(parts.mcp, bearer(granted.json()["access_token"])).whoami())
    assert who["subject"] == "alice"
    assert who["act"] == {"sub": OBO_CLIENT}
    # Only for the server it protects, only by a client allowed to, only tokens meant for that client.
    assert as_token(parts, {**form, "resource": "https://x.example"}, auth=(OBO_CLIENT, OBO_SECRET)).json()[
        "error"] == "invalid_target"  # fmt: skip
    assert as_token(parts, form, auth=(XAA_CLIENT, XAA_SECRET)).json()["error"] == "unauthorized_client"
    elsewhere = parts.login("alice", audience="https://elsewhere.example")["access_token"]
    assert as_token(parts, {**form, "subject_token": elsewhere}, auth=(OBO_CLIENT, OBO_SECRET)).json()[
        "error"] == "invalid_grant"  # fmt: skip


def test_the_as_serves_the_gateways_machine_client_bound_by_dpop(parts: Parts) -> None:
    key = new_key("machine")
    proof = make_proof(key, "POST", parts.authorization_server + "/token")
    form = {"grant_type": "client_credentials", "resource": parts.mcp}
    granted = as_token(parts, form, auth=(M2M_CLIENT, M2M_SECRET), proof=proof)
    assert granted.status_code == 200, granted.text
    assert granted.json()["token_type"] == "DPoP"
    who = result_of(Mcp(parts.mcp, dpop(granted.json()["access_token"], key)).whoami())
    assert (who["subject"], who["bound"]) == (M2M_CLIENT, True)
    assert as_token(parts, form, auth=(M2M_CLIENT, "wrong")).status_code == 401
    assert as_token(parts, form, auth=(XAA_CLIENT, XAA_SECRET)).json()["error"] == "unauthorized_client"


def test_dpop_binds_the_token_and_the_server_refuses_it_without_a_fresh_proof(parts: Parts) -> None:
    key, other = new_key("client"), new_key("thief")
    token_url = parts.authorization_server + "/token"
    granted = jwt_bearer(parts, id_jag_for(parts, "alice"), auth=(XAA_CLIENT, XAA_SECRET),
                         proof=make_proof(key, "POST", token_url))  # fmt: skip
    assert granted.status_code == 200, granted.text
    assert granted.json()["token_type"] == "DPoP"
    token = granted.json()["access_token"]
    assert unverified(token)[1]["cnf"] == {"jkt": key.thumbprint()}

    assert result_of(Mcp(parts.mcp, dpop(token, key)).whoami())["bound"] is True

    def refused(authorize: Any, error: str) -> None:
        answer = Mcp(parts.mcp, authorize).whoami()
        assert answer.status_code == 401, answer.text
        challenge = answer.headers["www-authenticate"]
        assert challenge.startswith("DPoP ")
        assert f'error="{error}"' in challenge

    refused(bearer(token), "invalid_token")
    refused(lambda m, u: {"authorization": f"DPoP {token}"}, "invalid_dpop_proof")
    stale = make_proof(key, "POST", parts.mcp, token)
    replay = Mcp(parts.mcp, lambda m, u: {"authorization": f"DPoP {token}", "dpop": stale})
    assert replay.post("initialize").status_code != 401  # the first use of the proof passes the DPoP check
    refused(lambda m, u: {"authorization": f"DPoP {token}", "dpop": stale}, "invalid_dpop_proof")
    refused(dpop(token, other), "invalid_token")
    refused(lambda m, u: {"authorization": f"DPoP {token}", "dpop": make_proof(key, m, u + "?x=1", token)},
            "invalid_dpop_proof")  # fmt: skip
    refused(lambda m, u: {"authorization": f"DPoP {token}", "dpop": make_proof(key, "GET", u, token)},
            "invalid_dpop_proof")  # fmt: skip
    refused(lambda m, u: {"authorization": f"DPoP {token}", "dpop": make_proof(key, m, u, "other")},
            "invalid_dpop_proof")  # fmt: skip
    refused(lambda m, u: {"authorization": f"DPoP {token}", "dpop": make_proof(key, m, u, token,
                                                                               iat=time.time() - 600)},
            "invalid_dpop_proof")  # fmt: skip
    # A token-request proof is single use at the AS too.
    again = make_proof(key, "POST", token_url)
    first = jwt_bearer(parts, id_jag_for(parts, "alice"), auth=(XAA_CLIENT, XAA_SECRET), proof=again)
    assert first.status_code == 200
    second = jwt_bearer(parts, id_jag_for(parts, "alice"), auth=(XAA_CLIENT, XAA_SECRET), proof=again)
    assert second.json()["error"] == "invalid_dpop_proof"


def test_with_nonces_and_dpop_required_both_servers_demand_a_proof_and_their_nonce(tmp_path: Path) -> None:
    with enterprise_parts(tmp_path, gateway=GATEWAY, dpop_nonce=True, dpop_required=True) as parts:
        key = new_key("client")
        token_url = parts.authorization_server + "/token"
        unproven = jwt_bearer(parts, parts.workload_token())
        assert (unproven.status_code, unproven.json()["error"]) == (400, "invalid_dpop_proof")
        # The MCP server challenges in the DPoP scheme, the SDK's resource_metadata kept.
        challenge = httpx2.post(parts.mcp, content="{}", headers=MCP_HEADERS, timeout=10)
        assert challenge.status_code == 401
        assert challenge.headers["www-authenticate"].startswith('DPoP algs="ES256')
        assert "resource_metadata=" in challenge.headers["www-authenticate"]
        first = jwt_bearer(parts, parts.workload_token(), proof=make_proof(key, "POST", token_url))
        assert first.status_code == 400
        assert first.json()["error"] == "use_dpop_nonce"
        nonce = first.headers["dpop-nonce"]
        granted = jwt_bearer(
            parts, parts.workload_token(), proof=make_proof(key, "POST", token_url, nonce=nonce)
        )
        assert granted.status_code == 200, granted.text
        token = granted.json()["access_token"]
        at_rs = Mcp(parts.mcp, dpop(token, key)).whoami()
        assert at_rs.status_code == 401
        assert 'error="use_dpop_nonce"' in at_rs.headers["www-authenticate"]
        rs_nonce = at_rs.headers["dpop-nonce"]
        with_nonce = Mcp(parts.mcp, lambda m, u: {"authorization": f"DPoP {token}",
                                                  "dpop": make_proof(key, m, u, token,
                                                                     nonce=rs_nonce)})  # fmt: skip
        assert result_of(with_nonce.whoami())["subject"] == WORKLOAD
