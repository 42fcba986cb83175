"""An enterprise identity provider that issues ID-JAGs (draft-ietf-oauth-identity-assertion-authz-grant,
MCP's Enterprise-Managed Authorization, SEP-990), for the end-to-end tests; not foldgate code.

``python -m tests.e2e.enterprise_idp.idp <config.json>`` serves on the config's port:

* ``POST /token``: RFC 8693 token exchange only. The client authenticates (``client_secret_basic`` or
  ``client_secret_post``); ``requested_token_type`` must be ``...:id-jag``; the subject token is one of
  this IdP's own tokens: an ID token (``subject_token_type ...:id_token``, its ``aud`` the authenticated
  client, as the draft requires) or an access token (``...:access_token``, ``typ at+jwt``, its ``aud``
  one of the client's registered audiences: the gateway trades the token its caller signed in with);
  ``audience`` must be an authorization server this IdP mints ID-JAGs for and ``resource`` a resource its
  policy knows. Then the policy: a revoked user gets ``invalid_grant``, a user the resource's allow-list
  lacks gets ``access_denied`` (naming user and resource). The ID-JAG is a JWT with ``typ
  oauth-id-jag+jwt`` and iss, sub, aud (the AS issuer), resource, client_id (the client's id at that
  AS), jti, iat, exp (``id_jag_ttl``), scope when asked.
* ``/.well-known/openid-configuration`` and ``/.well-known/oauth-authorization-server``, ``/jwks``.
* A workload issuer at ``<issuer>/workload`` (its own key, ``/workload/jwks``): signs workload JWTs.
* Test controls (what an admin console or a login page would do): ``POST /test/login`` {user,
  client_id, audience, scope} answers an ID token and an access token for a known user;
  ``POST /test/revoke`` / ``/test/restore`` {user}; ``POST /test/workload`` {sub, audience, ttl} a
  workload JWT; ``GET /test/log`` every exchange (client, subject, audience, resource, outcome: never a
  token).
"""

from __future__ import annotations

import base64
import secrets
import sys
import time
from typing import Any
from urllib.parse import unquote_plus

from joserfc import jwt
from joserfc.errors import JoseError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.e2e.enterprise_idp.common import (
    ACCESS_TOKEN,
    ID_JAG,
    ID_JAG_TYP,
    ID_TOKEN,
    TOKEN_EXCHANGE,
    load_config,
    new_key,
    public_jwks,
    serve,
    sign,
    unverified,
)

CONFIG = load_config(sys.argv[1])
ISSUER: str = CONFIG["issuer"]
WORKLOAD_ISSUER = ISSUER + "/workload"
CLIENTS: dict[str, dict[str, Any]] = CONFIG["clients"]  # id -> secret, audiences, as_client_ids
USERS: set[str] = set(CONFIG["users"])
POLICY: dict[str, list[str]] = CONFIG["policy"]  # resource -> users allowed to use it
AUTHORIZATION_SERVERS: set[str] = set(CONFIG["authorization_servers"])  # ID-JAG audiences
ID_JAG_TTL = int(CONFIG.get("id_jag_ttl", 300))
TOKEN_TTL = int(CONFIG.get("token_ttl", 3600))
KEY = new_key("idp-1")
WORKLOAD_KEY = new_key("workload-1")
REVOKED: set[str] = set()
LOG: list[dict[str, Any]] = []


def error(code: str, description: str, status: int = 400, **log: Any) -> JSONResponse:
    LOG.append({"outcome": "refused", "error": code, "error_description": description, **log})
    headers = {"www-authenticate": 'Basic realm="idp"'} if status == 401 else None
    return JSONResponse({"error": code, "error_description": description}, status, headers=headers)


def client_of(request: Request, form: dict[str, str]) -> str | None:
    """The authenticated client's id (client_secret_basic, else client_secret_post), or None."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("basic "):
        try:
            client_id, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return None
        client_id, secret = unquote_plus(client_id), unquote_plus(secret)
    else:
        client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
    known = CLIENTS.get(client_id)
    if known is None or not secrets.compare_digest(str(known["secret"]), secret):
        return None
    return client_id


def subject_of(token: str, token_type: str, client_id: str) -> str:
    """The user a subject token names, if it is one of this IdP's own valid tokens of the declared
    type meant for this client; ValueError with why else."""
    header, _ = unverified(token)
    try:
        claims = jwt.decode(token, KEY, algorithms=["ES256"]).claims
        jwt.JWTClaimsRegistry(leeway=5, iss={"essential": True, "value": ISSUER},
                              exp={"essential": True}, sub={"essential": True}).validate(claims)  # fmt: skip
    except JoseError as exc:
        raise ValueError(f"subject_token is not valid: {exc.description or exc.error}") from exc
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    if token_type == ID_TOKEN:
        if header.get("typ") != "JWT" or "nonce" not in claims:
            raise ValueError("subject_token is not an ID token")
        if client_id not in audiences:
            raise ValueError("the ID token was not issued to this client")
    elif token_type == ACCESS_TOKEN:
        if header.get("typ") != "at+jwt":
            raise ValueError("subject_token is not an access token")
        if not set(audiences) & set(CLIENTS[client_id].get("audiences", [])):
            raise ValueError("the access token is not for a resource of this client")
    else:
        raise ValueError(f"subject_token_type {token_type!r} is not accepted here")
    return str(claims["sub"])


async def token(request: Request) -> JSONResponse:
    form = {k: str(v) for k, v in (await request.form()).items()}
    client_id = client_of(request, form)
    if client_id is None:
        return error("invalid_client", "client authentication failed", 401)
    log: dict[str, Any] = {"client": client_id, "audience": form.get("audience"),
                           "resource": form.get("resource"),
                           "subject_token_type": form.get("subject_token_type")}  # fmt: skip
    if form.get("grant_type") != TOKEN_EXCHANGE:
        return error("unsupported_grant_type", "only token exchange is served here", **log)
    if form.get("requested_token_type") != ID_JAG:
        return error("invalid_request", "requested_token_type must be an ID-JAG", **log)
    for name in ("subject_token", "subject_token_type", "audience", "resource"):
        if not form.get(name):
            return error("invalid_request", f"{name} is required", **log)
    try:
        user = subject_of(form["subject_token"], form["subject_token_type"], client_id)
    except ValueError as exc:
        return error("invalid_grant", str(exc), **log)
    log["subject"] = user
    audience, resource = form["audience"], form["resource"]
    if audience not in AUTHORIZATION_SERVERS:
        return error("invalid_target", f"no ID-JAGs are issued for {audience}", **log)
    if resource not in POLICY:
        return error("invalid_target", f"{resource} is not an application of this IdP", **log)
    if user in REVOKED:
        return error("invalid_grant", f"access of {user} was revoked", **log)
    if user not in POLICY[resource]:
        return error("access_denied", f"policy does not allow {user} to use {resource}", **log)
    now = int(time.time())
    as_client = CLIENTS[client_id].get("as_client_ids", {}).get(audience, client_id)
    claims = {"iss": ISSUER, "sub": user, "aud": audience, "resource": resource, "client_id": as_client,
              "jti": secrets.token_urlsafe(16), "iat": now, "exp": now + ID_JAG_TTL,
              "email": f"{user}@example.com"}  # fmt: skip
    if form.get("scope"):
        claims["scope"] = form["scope"]
    LOG.append({"outcome": "issued", **log})
    answer = {"access_token": sign(KEY, claims, ID_JAG_TYP), "issued_token_type": ID_JAG,
              "token_type": "N_A", "expires_in": ID_JAG_TTL}  # fmt: skip
    if form.get("scope"):
        answer["scope"] = form["scope"]
    return JSONResponse(answer, headers={"cache-control": "no-store"})


def metadata(_: Request) -> JSONResponse:
    return JSONResponse({
        "issuer": ISSUER,
        "token_endpoint": ISSUER + "/token",
        "jwks_uri": ISSUER + "/jwks",
        "authorization_endpoint": ISSUER + "/authorize",
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "grant_types_supported": [TOKEN_EXCHANGE],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "identity_chaining_requested_token_types_supported": [ID_JAG],
    })  # fmt: skip


async def login(request: Request) -> JSONResponse:
    body = await request.json()
    user, client_id = str(body["user"]), str(body["client_id"])
    if user not in USERS:
        return JSONResponse({"error": "unknown user"}, 404)
    now = int(time.time())
    ttl = int(body.get("ttl", TOKEN_TTL))
    base = {"iss": ISSUER, "sub": user, "iat": now, "exp": now + ttl, "email": f"{user}@example.com"}
    id_token = sign(KEY, {**base, "aud": client_id, "nonce": secrets.token_urlsafe(8), "auth_time": now})
    access = {**base, "aud": body.get("audience", client_id), "client_id": client_id,
              "jti": secrets.token_urlsafe(16), "scope": body.get("scope", "openid")}  # fmt: skip
    return JSONResponse(
        {"id_token": id_token, "access_token": sign(KEY, access, "at+jwt"), "expires_in": ttl}
    )


async def revoke(request: Request) -> JSONResponse:
    REVOKED.add(str((await request.json())["user"]))
    return JSONResponse({"revoked": sorted(REVOKED)})


async def restore(request: Request) -> JSONResponse:
    REVOKED.discard(str((await request.json())["user"]))
    return JSONResponse({"revoked": sorted(REVOKED)})


async def workload(request: Request) -> JSONResponse:
    body = await request.json()
    now = int(time.time())
    claims = {"iss": WORKLOAD_ISSUER, "sub": str(body["sub"]), "aud": body["audience"], "iat": now,
              "exp": now + int(body.get("ttl", 300)), "jti": secrets.token_urlsafe(16)}  # fmt: skip
    return JSONResponse({"token": sign(WORKLOAD_KEY, claims)})


app = Starlette(routes=[
    Route("/token", token, methods=["POST"]),
    Route("/.well-known/openid-configuration", metadata),
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/jwks", lambda _: JSONResponse(public_jwks(KEY))),
    Route("/workload/jwks", lambda _: JSONResponse(public_jwks(WORKLOAD_KEY))),
    Route("/test/login", login, methods=["POST"]),
    Route("/test/revoke", revoke, methods=["POST"]),
    Route("/test/restore", restore, methods=["POST"]),
    Route("/test/workload", workload, methods=["POST"]),
    Route("/test/log", lambda _: JSONResponse(LOG)),
])  # fmt: skip

if __name__ == "__main__":
    serve(app, int(CONFIG["port"]))
