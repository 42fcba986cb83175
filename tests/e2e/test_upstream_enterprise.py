"""End to end: `foldgate serve` in front of the enterprise real parts (tests/e2e/enterprise_idp/: an IdP
issuing ID-JAGs with a per-user policy, an authlib authorization server, an MCP SDK resource server),
people signed in at the IdP calling through the official MCP client with the IdP's access token.

Pins: ``id_jag``: alice's call reaches the server as alice, with no dynamic registration although the AS
offers it; bob's is one ``upstream_needs_authorization`` tool error naming the IdP's ``access_denied``
and nothing reaches the server for him; revoking alice at the IdP takes effect at the next refresh of
her short-lived token (not before), restoring her works again. ``token_exchange``: alice reaches the
server on her own behalf with foldgate as the actor. ``workload_jwt``: the workload's JWT (from an
identity agent's command) gets a token with no client secret; a workload the AS refuses is asked once,
and neither a reindex nor a call asks again; status and audit show each grant's kind and outcome, never a
person. ``dpop: true`` (client_credentials, workload_jwt, id_jag, token_exchange): the token is
DPoP-bound, every request carries a proof, and the token replayed as Bearer, without a proof or with a
proof already used is refused 401 by the server. No token, assertion or client secret
appears in foldgate's log, status or events.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from foldgate.dev.procs import free_port
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
from tests.procs import foldgate_serve

pytestmark = pytest.mark.e2e

TOKEN_TTL = 6  # the AS's access tokens: foldgate refreshes a quarter of the lifetime before expiry
SCOPE = "foldgate:read foldgate:write foldgate:destructive"
WHOAMI = {"name": "whoami", "description": "Who the access token was issued to.",
          "annotations": {"readOnlyHint": True}}  # fmt: skip
STRANGER = "spiffe://example.org/stranger"
JWT = re.compile(r"eyJ[\w-]{5,}\.eyJ[\w-]{5,}\.[\w-]{10,}")


@dataclass
class Setup:
    base: str
    parts: Parts
    log: Path
    operator: dict[str, str]


def write_secrets(folder: Path, secrets: dict[str, str]) -> None:
    """foldgate serve's local secrets: one file per name beside its SQLite store."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for name, value in secrets.items():
        (folder / name).write_text(value)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    tmp = tmp_path_factory.mktemp("enterprise-gateway")
    port = free_port()
    gateway = f"http://127.0.0.1:{port}"
    with ExitStack() as stack:
        parts = stack.enter_context(enterprise_parts(tmp / "parts", gateway=gateway, token_ttl=TOKEN_TTL))
        write_secrets(tmp / "secrets", {"idp-client": IDP_SECRET, "xaa-client": XAA_SECRET,
                                        "obo-client": OBO_SECRET, "m2m-client": M2M_SECRET})  # fmt: skip
        (tmp / "stranger.jwt").write_text(parts.workload_token(STRANGER))
        idp = {
            "token_url": parts.idp + "/token",
            "client_id": IDP_CLIENT,
            "client_secret_secret": "idp-client",
        }
        xaa = {"kind": "id_jag", "idp": idp, "client_id": XAA_CLIENT, "client_secret_secret": "xaa-client",
               # The caller's identity is the IdP access token they signed in to foldgate with.
               "subject_token": {"inbound": True, "type": "access_token"}, "tools": [WHOAMI]}  # fmt: skip
        obo = {"kind": "token_exchange", "token_url": parts.authorization_server + "/token",
               "client_id": OBO_CLIENT, "client_secret_secret": "obo-client", "tools": [WHOAMI]}  # fmt: skip
        agent = parts.workload_agent()
        workload = {"kind": "workload_jwt", "assertion": {"source": "command", "argv": agent}, "dpop": True}
        stranger = {
            "kind": "workload_jwt",
            "assertion": {"source": "file", "path": str(tmp / "stranger.jwt")},
        }
        m2m = {"kind": "client_credentials", "token_url": parts.authorization_server + "/token",
               "client_id": M2M_CLIENT, "client_secret_secret": "m2m-client", "dpop": True}  # fmt: skip
        config = {"direct_tool_response_mode": "full",
                  "servers": [{"name": "xaa", "url": parts.mcp, "auth": xaa},
                              {"name": "obo", "url": parts.mcp, "auth": obo},
                              {"name": "wl", "url": parts.mcp, "auth": workload},
                              {"name": "wlx", "url": parts.mcp, "auth": stranger},
                              {"name": "m2m", "url": parts.mcp, "auth": m2m},
                              {"name": "xaad", "url": parts.mcp, "auth": {**xaa, "dpop": True}},
                              {"name": "obod", "url": parts.mcp, "auth": {**obo, "dpop": True}}]}  # fmt: skip
        base = stack.enter_context(
            foldgate_serve(
                config,
                tmp,
                "--oauth-issuer",
                parts.idp,
                "--interval",
                "600",
                port=port,
                # People sign in at the IdP; token_exchange sends their token to the AS, which the
                # operator allows (a tenant config alone may send it only to its issuer).
                env={"FOLDGATE_EXCHANGE_ISSUERS": parts.authorization_server},
            )
        )
        operator = {"authorization": f"Bearer {(tmp / 'operator.key').read_text().strip()}"}
        yield Setup(base, parts, tmp / "serve.log", operator)


async def call(
    setup: Setup, user: str, tool: str, arguments: dict[str, Any] | None = None, path: str = "/mcp/all"
) -> Any:
    """``user`` signs in at the IdP (an access token for foldgate) and calls ``tool`` through foldgate."""
    token = setup.parts.login(user, scope=SCOPE)["access_token"]
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with Client(streamable_http_client(setup.base + path, http_client=http)) as client:
        return await client.call_tool(tool, arguments or {})


def text_of(result: Any) -> str:
    return str(result.content[0].text)


def whoami_of(result: Any) -> dict[str, Any]:
    assert not result.is_error, text_of(result)
    who: dict[str, Any] = json.loads(text_of(result))
    return who


async def test_id_jag_alice_reaches_the_server_as_herself_without_registration(setup: Setup) -> None:
    who = whoami_of(await call(setup, "alice", "xaa__whoami"))
    assert who["subject"] == "alice"
    assert who["client"] == XAA_CLIENT
    issued = [e for e in setup.parts.idp_log() if e.get("subject") == "alice" and e["outcome"] == "issued"]
    assert issued
    assert issued[-1]["resource"] == setup.parts.mcp
    assert issued[-1]["audience"] == setup.parts.authorization_server
    grants = [e["grant"] for e in setup.parts.as_log()]
    assert "id_jag" in grants
    assert "registration" not in grants  # offered by the AS, never needed for these grants


async def test_id_jag_bob_is_refused_by_the_idp_policy_with_one_clear_error(setup: Setup) -> None:
    served = len(setup.parts.rs_log()["calls"])
    asked = len([e for e in setup.parts.idp_log() if e.get("subject") == "bob"])
    result = await call(setup, "bob", "xaa__whoami")
    assert result.is_error
    text = text_of(result)
    assert "upstream_needs_authorization" in text
    assert "access_denied" in text
    assert "IdP" in text
    assert len(setup.parts.rs_log()["calls"]) == served  # nothing reached the server for bob
    refusals = [e for e in setup.parts.idp_log() if e.get("subject") == "bob"]
    assert len(refusals) == asked + 1  # asked once: a policy refusal is not retried
    assert refusals[-1]["error"] == "access_denied"


async def test_id_jag_revocation_at_the_idp_takes_effect_at_the_next_refresh(setup: Setup) -> None:
    assert whoami_of(await call(setup, "alice", "xaa__whoami"))["subject"] == "alice"
    # The token foldgate holds for alice is replaced a quarter of its lifetime before it expires
    # (counted from when foldgate received it: a moment after the AS logged it).
    grants = [e for e in setup.parts.as_log() if e.get("grant") == "id_jag" and e.get("subject") == "alice"]
    refresh_at = grants[-1]["expires_at"] - TOKEN_TTL / 4
    exchanges = len([e for e in setup.parts.idp_log() if e.get("subject") == "alice"])
    setup.parts.revoke("alice")
    try:
        if time.time() < refresh_at - 1:
            # Within her token's use: revocation at the IdP does not reach a token already issued.
            assert whoami_of(await call(setup, "alice", "xaa__whoami"))["subject"] == "alice"
            assert len([e for e in setup.parts.idp_log() if e.get("subject") == "alice"]) == exchanges
        # Past its refresh moment (and its expiry, whatever the delay): the next call exchanges again.
        time.sleep(max(0.0, refresh_at + TOKEN_TTL / 4 + 0.5 - time.time()))
        refused = await call(setup, "alice", "xaa__whoami")
        assert refused.is_error
        assert "upstream_needs_authorization" in text_of(refused)
        assert "invalid_grant" in text_of(refused)
        last = [e for e in setup.parts.idp_log() if e.get("subject") == "alice"][-1]
        assert (last["outcome"], last["error"]) == ("refused", "invalid_grant")
    finally:
        setup.parts.restore("alice")
    assert whoami_of(await call(setup, "alice", "xaa__whoami"))["subject"] == "alice"


async def test_token_exchange_reaches_the_server_on_alices_behalf(setup: Setup) -> None:
    who = whoami_of(await call(setup, "alice", "obo__whoami"))
    assert who["subject"] == "alice"
    assert who["client"] == OBO_CLIENT
    assert who["act"] == {"sub": OBO_CLIENT}
    bob = whoami_of(await call(setup, "bob", "obo__whoami"))  # the AS trusts the IdP's word for bob
    assert bob["subject"] == "bob"


async def test_people_calling_at_once_each_reach_the_server_as_themselves(setup: Setup) -> None:
    people = ["alice", "bob"] * 4
    results = await asyncio.gather(*(call(setup, user, "obo__whoami") for user in people))
    assert [whoami_of(r)["subject"] for r in results] == people


async def test_the_code_surface_calls_as_the_signed_in_person(setup: Setup) -> None:
    program = 'return await call_tool("xaa", "whoami", {});'
    result = await call(setup, "alice", "code_execution", {"code": program}, path="/mcp/code")
    assert not result.is_error, text_of(result)
    ran = json.loads(text_of(result))
    assert json.loads(ran["value"]["result"])["subject"] == "alice"
    assert ran["calls"] == [{"tool": "xaa__whoami", "ok": True, "ms": ran["calls"][0]["ms"]}]
    # The agent's code catches the refusal: the ToolError carries the gateway's error object.
    caught = 'try { await call_tool("xaa", "whoami", {}); return null; } catch (e) { return e.error; }'
    refused = await call(setup, "bob", "code_execution", {"code": caught}, path="/mcp/code")
    error = json.loads(text_of(refused))["value"]
    assert error["error_type"] == "upstream_needs_authorization"
    assert "access_denied" in error["error"]


def status_of(setup: Setup, server: str) -> dict[str, Any]:
    answer = httpx2.get(setup.base + "/api/v1/status", params={"tenant": "default"}, headers=setup.operator,
                        timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    state: dict[str, Any] = answer.json()["auth"][server]
    return state


async def test_workload_jwt_reaches_the_server_as_the_workload_bound_with_no_client_secret(
    setup: Setup,
) -> None:
    who = whoami_of(await call(setup, "alice", "wl__whoami"))
    assert (who["subject"], who["bound"]) == (WORKLOAD, True)  # dpop: true on this one
    issued = [e for e in setup.parts.as_log() if e.get("grant") == "workload_jwt"]
    assert issued
    assert {(e["auth_method"], e["dpop"]) for e in issued} == {("none", True)}
    state = status_of(setup, "wl")
    assert (state["kind"], state["state"]) == ("workload_jwt", "obtained")


async def test_a_refused_workload_is_asked_once_and_its_refusal_is_in_the_status(setup: Setup) -> None:
    def asked() -> int:
        return sum(STRANGER in str(e.get("error_description")) for e in setup.parts.as_log())

    assert asked() == 1  # the indexer's first listing
    reindexed = httpx2.post(setup.base + "/api/v1/reindex", json={"tenant": "default"},
                            headers=setup.operator, timeout=60)  # fmt: skip
    assert reindexed.status_code == 202, reindexed.text
    result = await call(setup, "alice", "wlx__whoami")
    assert result.is_error
    assert asked() == 1  # neither the reindex nor the call asked again: the refusal is final
    state = status_of(setup, "wlx")
    assert (state["kind"], state["state"]) == ("workload_jwt", "refused")
    assert state["last_grant"]["error"] == "invalid_grant"


async def test_dpop_bound_tokens_are_refused_when_replayed_without_their_proof(setup: Setup) -> None:
    who = whoami_of(await call(setup, "alice", "m2m__whoami"))
    assert (who["subject"], who["bound"]) == (M2M_CLIENT, True)
    machine = [e for e in setup.parts.as_log() if e.get("grant") == "client_credentials"]
    assert machine
    assert all(e["dpop"] for e in machine)
    presented = [s for s in setup.parts.rs_seen() if (s["authorization"] or "").startswith("DPoP ")]
    assert presented
    assert all(s["dpop"] for s in presented)  # a proof on every request foldgate made with it
    token = str(presented[-1]["authorization"]).split(" ", 1)[1]
    proof = str(presented[-1]["dpop"])
    served = len(setup.parts.rs_log()["calls"])
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    for stolen, error in (
        ({"authorization": f"Bearer {token}"}, "invalid_token"),
        ({"authorization": f"DPoP {token}"}, "invalid_dpop_proof"),
        ({"authorization": f"DPoP {token}", "dpop": proof}, "invalid_dpop_proof"),  # the proof, replayed
    ):
        answer = httpx2.post(setup.parts.mcp, content=body, headers={**headers, **stolen}, timeout=10)
        assert answer.status_code == 401, answer.text
        assert f'error="{error}"' in answer.headers["www-authenticate"]
    assert len(setup.parts.rs_log()["calls"]) == served


def test_status_and_audit_name_the_exchange_kinds_grants_and_no_person(setup: Setup) -> None:
    for server, kind in (("xaa", "id_jag"), ("obo", "token_exchange")):
        state = status_of(setup, server)
        assert state["kind"] == kind
        # The latest grant above: obtained, or (id_jag) bob's refusal by the IdP's policy.
        expected = {"obtained": None, "refused": "access_denied"}
        assert state["state"] in expected
        assert (state["last_grant"]["outcome"], state["last_grant"]["error"]) == (
            state["state"], expected[state["state"]])  # fmt: skip
    answer = httpx2.get(setup.base + "/api/v1/activity", headers=setup.operator, timeout=30,
                        params={"tenant": "default", "kind": "audit", "limit": 1000})  # fmt: skip
    grants = [e for e in answer.json()["events"] if e.get("action") == "upstream.grant"]
    xaa = [e for e in grants if e["target"] == "xaa"]
    assert {e["outcome"] for e in xaa} >= {"ok", "refused"}
    assert any("access_denied" in e["detail"] for e in xaa)  # bob, by the IdP's policy
    assert any("invalid_grant" in e["detail"] for e in xaa)  # alice, revoked
    assert "obo" in {e["target"] for e in grants}
    assert not [e for e in grants if "alice" in json.dumps(e) or "bob" in json.dumps(e)]


async def test_dpop_binds_the_exchange_kinds_tokens_and_a_replay_without_proof_is_refused(
    setup: Setup,
) -> None:
    for tool in ("xaad__whoami", "obod__whoami"):
        who = whoami_of(await call(setup, "alice", tool))
        assert (who["subject"], who["bound"]) == ("alice", True)
    bound = {e["grant"] for e in setup.parts.as_log() if e.get("subject") == "alice" and e.get("dpop")}
    assert bound >= {"id_jag", "token_exchange"}
    presented = [s for s in setup.parts.rs_seen() if (s["authorization"] or "").startswith("DPoP ")]
    token = str(presented[-1]["authorization"]).split(" ", 1)[1]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    stolen = httpx2.post(setup.parts.mcp, content=body, timeout=10,
                         headers={**headers, "authorization": f"Bearer {token}"})  # fmt: skip
    assert stolen.status_code == 401


def test_no_token_assertion_or_secret_reaches_foldgates_log_status_or_events(setup: Setup) -> None:
    assert [e for e in setup.parts.idp_log() if e["outcome"] == "issued"]  # ID-JAGs were minted above
    pages = [setup.log.read_text()]
    for path in ("/api/v1/status", "/api/v1/activity"):
        answer = httpx2.get(
            setup.base + path, params={"tenant": "default"}, headers=setup.operator, timeout=30
        )
        assert answer.status_code == 200, answer.text
        pages.append(answer.text)
    assert "xaa" in pages[2]  # the calls above are among the events searched
    for text in pages:
        leaked = JWT.findall(text)
        assert leaked == [], leaked[:1]
        for secret in (IDP_SECRET, XAA_SECRET, OBO_SECRET, M2M_SECRET):
            assert secret not in text
