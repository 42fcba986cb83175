"""Starts the enterprise real parts (IdP, authorization server, MCP resource server) as three processes on
loopback and hands a test their URLs, clients and test controls. Independent of foldgate's code.

Who is registered where (what an administrator would set up):

* at the IdP: the gateway's client ``IDP_CLIENT`` (secret ``IDP_SECRET``), allowed to exchange ID tokens
  issued to it and access tokens for ``gateway`` (the gateway's public URL: what its callers sign in for);
  its id at the AS is ``XAA_CLIENT``. Users ``alice`` and ``bob``; the policy lets alice (only) use
  the MCP server.
* at the AS: ``XAA_CLIENT`` (``client_secret_basic``, JWT-bearer: ID-JAGs), ``OBO_CLIENT``
  (``client_secret_basic``, token exchange of tokens issued for ``gateway``) and a workload client for
  the IdP's workload issuer, which may act as ``WORKLOAD``; and ``M2M_CLIENT`` (client credentials).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

REPO = Path(__file__).resolve().parents[3]
IDP_CLIENT, IDP_SECRET = "foldgate-at-idp", "idp-secret-for-foldgate"
XAA_CLIENT, XAA_SECRET = "foldgate-xaa", "as-secret-for-xaa"
OBO_CLIENT, OBO_SECRET = "foldgate-obo", "as-secret-for-obo"
M2M_CLIENT, M2M_SECRET = "foldgate-m2m", "as-secret-for-m2m"
WORKLOAD = "spiffe://example.org/foldgate"
USERS = ("alice", "bob")
# A workload identity agent's CLI: prints a fresh workload JWT from the IdP's workload issuer.
AGENT = ("import json, sys, urllib.request as u; "
         "body = json.dumps({'sub': sys.argv[2], 'audience': sys.argv[3]}).encode(); "
         "r = u.urlopen(u.Request(sys.argv[1], body, {'content-type': 'application/json'}), timeout=10); "
         "print(json.load(r)['token'])")  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited early: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{url} did not come up within {timeout}s")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


@dataclass
class Parts:
    """The running parts: URLs, and the controls a test uses."""

    idp: str
    authorization_server: str
    mcp: str  # the resource server's MCP URL (also its RFC 8707 resource)
    gateway: str  # the audience the gateway's callers' tokens carry
    logs: Path

    def login(self, user: str, *, audience: str | None = None, scope: str = "openid", ttl: int = 3600,
              client_id: str = IDP_CLIENT) -> dict[str, str]:  # fmt: skip
        """``user`` signs in at the IdP: an ID token (for ``client_id``) and an access token (for
        ``audience``, default the gateway)."""
        body = {"user": user, "client_id": client_id, "audience": audience or self.gateway, "scope": scope,
                "ttl": ttl}  # fmt: skip
        r = httpx2.post(self.idp + "/test/login", json=body, timeout=10)
        r.raise_for_status()
        tokens: dict[str, str] = r.json()
        return tokens

    def revoke(self, user: str) -> None:
        httpx2.post(self.idp + "/test/revoke", json={"user": user}, timeout=10).raise_for_status()

    def restore(self, user: str) -> None:
        httpx2.post(self.idp + "/test/restore", json={"user": user}, timeout=10).raise_for_status()

    def workload_token(self, sub: str = WORKLOAD, *, audience: str | None = None, ttl: int = 300) -> str:
        """A workload JWT from the IdP's workload issuer, for the AS by default."""
        body = {"sub": sub, "audience": audience or self.authorization_server, "ttl": ttl}
        r = httpx2.post(self.idp + "/test/workload", json=body, timeout=10)
        r.raise_for_status()
        return str(r.json()["token"])

    def workload_agent(self, sub: str = WORKLOAD) -> list[str]:
        """The command line of a workload identity agent printing a fresh JWT for ``sub`` (for the AS)."""
        return [sys.executable, "-c", AGENT, self.idp + "/test/workload", sub, self.authorization_server]

    def idp_log(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = httpx2.get(self.idp + "/test/log", timeout=10).json()
        return data

    def as_log(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = httpx2.get(self.authorization_server + "/test/log", timeout=10).json()
        return data

    def rs_seen(self) -> list[dict[str, str | None]]:
        """What the MCP server was presented, request by request: the Authorization and DPoP headers
        (a test replays them, as a thief who copied them off the wire would)."""
        seen: list[dict[str, str | None]] = httpx2.get(
            self.mcp.removesuffix("/mcp") + "/_seen", timeout=10
        ).json()
        return seen

    def rs_log(self) -> dict[str, list[dict[str, Any]]]:
        data: dict[str, list[dict[str, Any]]] = httpx2.get(
            self.mcp.removesuffix("/mcp") + "/_log", timeout=10
        ).json()
        return data


@contextlib.contextmanager
def enterprise_parts(
    tmp: Path,
    *,
    gateway: str,
    id_jag_ttl: int = 300,
    token_ttl: int = 300,
    dpop_nonce: bool = False,
    dpop_required: bool = False,
) -> Iterator[Parts]:
    """The IdP, the AS and the MCP server, started together, for the duration of the block. ``gateway``
    is the audience of the tokens the gateway's callers sign in with (its public URL). ``dpop_nonce``:
    both servers demand their DPoP nonce; ``dpop_required``: both deal in DPoP-bound tokens only."""
    tmp.mkdir(parents=True, exist_ok=True)
    idp_port, as_port, rs_port = free_port(), free_port(), free_port()
    idp, issuer, rs = (f"http://127.0.0.1:{p}" for p in (idp_port, as_port, rs_port))
    mcp = rs + "/mcp"
    configs = {
        "idp": {"port": idp_port, "issuer": idp, "users": list(USERS), "policy": {mcp: ["alice"]},
                "authorization_servers": [issuer], "id_jag_ttl": id_jag_ttl,
                "clients": {IDP_CLIENT: {"secret": IDP_SECRET, "audiences": [gateway],
                                         "as_client_ids": {issuer: XAA_CLIENT}}}},
        "authorization_server": {
            "port": as_port, "issuer": issuer, "resource": mcp, "token_ttl": token_ttl,
            "dpop_nonce": dpop_nonce, "dpop_required": dpop_required,
            "idp_issuer": idp, "idp_jwks": idp + "/jwks", "workload_jwks": idp + "/workload/jwks",
            "clients": [
                {"client_id": XAA_CLIENT, "secret": XAA_SECRET, "auth_method": "client_secret_basic",
                 "grant_types": ["urn:ietf:params:oauth:grant-type:jwt-bearer"]},
                {"client_id": OBO_CLIENT, "secret": OBO_SECRET, "auth_method": "client_secret_basic",
                 "grant_types": ["urn:ietf:params:oauth:grant-type:token-exchange"],
                 "subject_audiences": [gateway]},
                {"client_id": M2M_CLIENT, "secret": M2M_SECRET, "auth_method": "client_secret_basic",
                 "grant_types": ["client_credentials"]},
                {"client_id": "workloads", "secret": None, "auth_method": "none",
                 "grant_types": ["urn:ietf:params:oauth:grant-type:jwt-bearer"],
                 "workload_issuer": idp + "/workload", "workloads": [WORKLOAD]},
            ]},
        "resource_server": {"port": rs_port, "issuer": issuer, "jwks": issuer + "/jwks",
                            "dpop_nonce": dpop_nonce, "dpop_required": dpop_required},
    }  # fmt: skip
    ready = {"idp": idp + "/.well-known/openid-configuration",
             "authorization_server": issuer + "/.well-known/oauth-authorization-server",
             "resource_server": rs + "/.well-known/oauth-protected-resource/mcp"}  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    procs: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as stack:
        try:
            started = {}
            for name, config in configs.items():
                path = tmp / f"{name}.json"
                path.write_text(json.dumps(config))
                log = stack.enter_context((tmp / f"{name}.log").open("wb"))
                cmd = [sys.executable, "-m", f"tests.e2e.enterprise_idp.{name}", str(path)]
                proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
                procs.append(proc)
                started[name] = proc
            for name, proc in started.items():
                _wait(ready[name], proc, tmp / f"{name}.log")
            yield Parts(idp, issuer, mcp, gateway, tmp)
        finally:
            for proc in procs:
                _stop(proc)
