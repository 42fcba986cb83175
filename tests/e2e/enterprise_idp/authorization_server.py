"""An MCP server's authorization server built on authlib's grant classes, for the end-to-end tests; not
foldgate code. ``python -m tests.e2e.enterprise_idp.authorization_server <config.json>``.

Grants at ``POST /token`` (authlib picks one by ``grant_type`` and, for the two JWT-bearer grants that
share it, by the assertion's ``typ``):

* **ID-JAG** (authlib's ``IDJAGGrant``, RFC 7523 profile): an assertion typed ``oauth-id-jag+jwt``
  signed by the trusted IdP, ``aud`` this issuer, its ``resource`` the MCP server this AS protects, a
  ``jti`` never seen before, and the client authenticated with ``client_secret_basic`` being the one the
  assertion's ``client_id`` names.
* **Workload JWT** (authlib's ``JWTBearerGrant``, RFC 7523 section 2.1): an assertion from the trusted
  workload issuer (client authentication ``none``: the assertion is the credential), its ``sub`` one
  of the workloads the issuer's client may act as.
* **Token exchange** (RFC 8693, on a ``BaseGrant``): on behalf of the user of a subject access token
  the trusted IdP issued to the exchanging client's audience; the access token carries ``act``.
* **Client credentials** (authlib's ``ClientCredentialsGrant``): the gateway's machine client.

Access tokens are RFC 9068 JWTs (``typ at+jwt``) for the MCP server (``aud``), ``token_ttl`` seconds
long, no refresh tokens. With a valid DPoP proof on the token request (RFC 9449 section 5) the token is
bound to the proof's key: ``token_type DPoP`` and ``cnf.jkt``; with ``dpop_nonce`` the AS demands its
nonce (400 ``use_dpop_nonce`` plus ``DPoP-Nonce``); with ``dpop_required`` a token request without a
proof is refused (400 ``invalid_dpop_proof``). RFC 8414 metadata advertises
``dpop_signing_alg_values_supported`` and a registration endpoint that refuses (and logs) every attempt:
these grants need none. ``GET /test/log`` lists every token request (grant, client, auth method, DPoP,
outcome), never a token.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.drafts.id_jag import IDJAGGrant
from authlib.oauth2.rfc6749 import (
    BaseGrant,
    ClientCredentialsGrant,
    ClientMixin,
    InvalidGrantError,
    InvalidRequestError,
    OAuth2Error,
    OAuth2Request,
    TokenEndpointMixin,
    UnauthorizedClientError,
)
from authlib.oauth2.rfc6749.requests import BasicOAuth2Payload
from authlib.oauth2.rfc7523 import JWTBearerGrant
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.e2e.enterprise_idp.common import (
    ACCESS_TOKEN,
    DPOP_ALGS,
    ID_JAG_TYP,
    JWT_BEARER,
    JWT_TOKEN,
    TOKEN_EXCHANGE,
    DpopError,
    DpopVerifier,
    Jwks,
    load_config,
    new_key,
    public_jwks,
    serve,
    sign,
    unverified,
)

CONFIG = load_config(sys.argv[1])
ISSUER: str = CONFIG["issuer"]
RESOURCE: str = CONFIG["resource"]  # the MCP server these tokens are for
TOKEN_ENDPOINT = ISSUER + "/token"
TOKEN_TTL = int(CONFIG.get("token_ttl", 300))
SCOPES: list[str] = CONFIG.get("scopes", ["files:read", "files:write"])
IDP = Jwks(CONFIG["idp_jwks"])
IDP_ISSUER: str = CONFIG["idp_issuer"]
WORKLOAD = Jwks(CONFIG["workload_jwks"])
KEY = new_key("as-1")
DPOP = DpopVerifier(require_nonce=bool(CONFIG.get("dpop_nonce", False)))
DPOP_REQUIRED = bool(CONFIG.get("dpop_required", False))  # DPoP-bound tokens only
LOG: list[dict[str, Any]] = []
USED_JTIS: set[str] = set()


@dataclass
class Client(ClientMixin):  # type: ignore[misc]
    """A registered client: how it authenticates and which grants it may use."""

    client_id: str
    secret: str | None
    auth_method: str
    grant_types: list[str]
    workload_issuer: str | None = None
    workloads: list[str] = field(default_factory=list)  # subjects a workload client may act as
    subject_audiences: list[str] = field(default_factory=list)  # subject tokens it may exchange

    def get_client_id(self) -> str:
        return self.client_id

    def check_client_secret(self, client_secret: str) -> bool:
        return self.secret is not None and secrets.compare_digest(self.secret, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == self.auth_method

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types

    def get_allowed_scope(self, scope: str) -> str:
        return " ".join(s for s in (scope or "").split() if s in SCOPES)


CLIENTS = {c["client_id"]: Client(**c) for c in CONFIG["clients"]}


@dataclass
class Principal:
    """Whom a token is about: a person (from the IdP) or a workload."""

    sub: str
    issuer: str

    def get_user_id(self) -> str:
        return self.sub


class FormRequest(OAuth2Request):  # type: ignore[misc]
    """authlib's request over a form already read by Starlette."""

    def __init__(self, request: Request, form: dict[str, str]) -> None:
        super().__init__(request.method, TOKEN_ENDPOINT, headers=request.headers)
        self._form = form
        self.payload = BasicOAuth2Payload(form)
        self.dpop_jkt: str | None = None
        self.resource = RESOURCE
        self.act: dict[str, str] | None = None

    @property
    def args(self) -> dict[str, str]:
        return {}

    @property
    def form(self) -> dict[str, str]:
        return self._form


def _assertion_typ(request: OAuth2Request) -> str | None:
    try:
        return unverified(request.form.get("assertion", ""))[0].get("typ")
    except ValueError:
        return None


def _target(request: FormRequest) -> str:
    """RFC 8707 ``resource`` (or RFC 8693 ``audience``) when given: it must be the MCP server."""
    asked = request.form.get("resource") or request.form.get("audience")
    if asked and asked != RESOURCE:
        raise OAuth2Error(error="invalid_target", description=f"no tokens are issued for {asked}")
    return RESOURCE


class IssueMixin:
    """Every grant answers the same way: an RFC 9068 JWT for the MCP server, DPoP-bound when proven."""

    request: FormRequest
    GRANT_TYPE: str

    def create_token_response(self) -> tuple[int, dict[str, Any], list[tuple[str, str]]]:
        request = self.request
        now = int(time.time())
        # A client_credentials token is about the client itself.
        user = request.user or Principal(request.client.get_client_id(), ISSUER)
        claims: dict[str, Any] = {"iss": ISSUER, "sub": user.sub, "aud": request.resource,
                                  "client_id": request.client.get_client_id(), "iat": now,
                                  "exp": now + TOKEN_TTL, "jti": secrets.token_urlsafe(16)}  # fmt: skip
        scope = request.scope
        if scope:
            claims["scope"] = scope
        if request.act:
            claims["act"] = request.act
        if request.dpop_jkt:
            claims["cnf"] = {"jkt": request.dpop_jkt}
        body: dict[str, Any] = {"access_token": sign(KEY, claims, "at+jwt"), "expires_in": TOKEN_TTL,
                                "token_type": "DPoP" if request.dpop_jkt else "Bearer"}  # fmt: skip
        if scope:
            body["scope"] = scope
        if self.GRANT_TYPE == TOKEN_EXCHANGE:
            body["issued_token_type"] = ACCESS_TOKEN
        LOG.append({"grant": GRANT_NAMES[self.GRANT_TYPE, self.__class__.__name__], "outcome": "issued",
                    "client": claims["client_id"], "subject": user.sub, "dpop": bool(request.dpop_jkt),
                    "auth_method": request.auth_method, "resource": request.resource,
                    "expires_at": time.time() + TOKEN_TTL})  # fmt: skip
        return 200, body, [("Cache-Control", "no-store"), ("Pragma", "no-cache")]


class IdJagGrant(IssueMixin, IDJAGGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic"]  # noqa: RUF012 - authlib's spelling

    @classmethod
    def check_token_endpoint(cls, request: OAuth2Request) -> bool:
        return request.payload.grant_type == JWT_BEARER and _assertion_typ(request) == ID_JAG_TYP

    def get_audiences(self) -> list[str]:
        return [ISSUER]

    def resolve_issuer_key(self, issuer: str, headers: dict[str, Any]) -> Any:
        if issuer != IDP_ISSUER:
            raise InvalidGrantError(description=f"{issuer} is not a trusted identity provider")
        return IDP.key_set(headers.get("kid"))

    def authenticate_user(self, subject: str) -> Principal:
        return Principal(subject, IDP_ISSUER)

    def check_jti(self, claims: dict[str, Any], jti: str) -> bool:
        if jti in USED_JTIS:
            return False
        USED_JTIS.add(jti)
        return True

    def check_id_jag_permission(self, client: Client, user: Principal, scopes: list[str]) -> bool:
        # The ID-JAG names the resource the IdP's policy allowed: it must be the server behind this AS.
        self.request.resource = RESOURCE
        return bool(self.request.id_jag_claims.get("resource") == RESOURCE)


class WorkloadGrant(IssueMixin, JWTBearerGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012 - the assertion is the credential

    @classmethod
    def check_token_endpoint(cls, request: OAuth2Request) -> bool:
        return request.payload.grant_type == JWT_BEARER and _assertion_typ(request) != ID_JAG_TYP

    def get_audiences(self) -> list[str]:
        return [ISSUER, TOKEN_ENDPOINT]

    def resolve_issuer_client(self, issuer: str) -> Client | None:
        return next((c for c in CLIENTS.values() if c.workload_issuer == issuer), None)

    def resolve_client_public_key(self, client: Client) -> Any:
        return WORKLOAD.key_set()

    def authenticate_user(self, subject: str) -> Principal:
        return Principal(subject, "workload")

    def validate_token_request(self) -> None:
        self.request.resource = _target(self.request)
        super().validate_token_request()
        self.request.auth_method = "none"
        if self.request.user is None:
            raise InvalidGrantError(description="the assertion names no subject")

    def has_granted_permission(self, client: Client, user: Principal) -> bool:
        if user.sub not in client.workloads:
            raise InvalidGrantError(description=f"workload {user.sub} may not use this server")
        return True


class MachineGrant(IssueMixin, ClientCredentialsGrant):  # type: ignore[misc]
    """RFC 6749 section 4.4, for the gateway's machine client (``client_secret_basic``)."""

    def validate_token_request(self) -> None:
        self.request.resource = _target(self.request)
        super().validate_token_request()


class TokenExchangeGrant(IssueMixin, BaseGrant, TokenEndpointMixin):  # type: ignore[misc]
    """RFC 8693 on-behalf-of: the subject token is an access token the trusted IdP issued for the
    exchanging client's own audience (the gateway); the new token names the client in ``act``."""

    GRANT_TYPE = TOKEN_EXCHANGE
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]  # noqa: RUF012

    def validate_token_request(self) -> None:
        client = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(TOKEN_EXCHANGE):
            raise UnauthorizedClientError(description=f"{client.client_id} may not exchange tokens")
        self.request.client = client
        form = self.request.form
        token, token_type = form.get("subject_token"), form.get("subject_token_type")
        if not token or not token_type:
            raise InvalidRequestError(description="subject_token and subject_token_type are required")
        if token_type not in (ACCESS_TOKEN, JWT_TOKEN):
            raise InvalidRequestError(description=f"subject_token_type {token_type} is not accepted")
        requested = form.get("requested_token_type")
        if requested and requested != ACCESS_TOKEN:
            raise InvalidRequestError(description=f"requested_token_type {requested} is not issued here")
        self.request.resource = _target(self.request)
        try:
            claims = IDP.verify(token, iss={"essential": True, "value": IDP_ISSUER},
                                aud={"essential": True, "values": client.subject_audiences},
                                sub={"essential": True})  # fmt: skip
        except ValueError as exc:
            raise InvalidGrantError(description=f"subject_token: {exc}") from exc
        self.validate_requested_scope()
        self.request.user = Principal(str(claims["sub"]), IDP_ISSUER)
        self.request.act = {"sub": client.client_id}


GRANT_NAMES = {(JWT_BEARER, "IdJagGrant"): "id_jag", (JWT_BEARER, "WorkloadGrant"): "workload_jwt",
               (TOKEN_EXCHANGE, "TokenExchangeGrant"): "token_exchange",
               ("client_credentials", "MachineGrant"): "client_credentials"}  # fmt: skip


class Server(AuthorizationServer):  # type: ignore[misc]
    def query_client(self, client_id: str) -> Client | None:
        return CLIENTS.get(client_id)

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        pass  # self-contained JWTs: nothing to keep

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass

    def create_oauth2_request(self, request: FormRequest) -> FormRequest:
        return request

    def handle_response(self, status: int, body: Any, headers: list[tuple[str, str]]) -> Response:
        return JSONResponse(body, status, headers=dict(headers))


SERVER = Server(scopes_supported=SCOPES)
SERVER.register_grant(IdJagGrant)
SERVER.register_grant(WorkloadGrant)
SERVER.register_grant(TokenExchangeGrant)
SERVER.register_grant(MachineGrant)


def _nonce_headers() -> dict[str, str]:
    return {"DPoP-Nonce": DPOP.nonce} if DPOP.require_nonce else {}


async def token(request: Request) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    oauth = FormRequest(request, form)
    proof = request.headers.get("dpop")
    if proof is None and DPOP_REQUIRED:
        why = "this server issues DPoP-bound tokens only: a DPoP proof is required"
        LOG.append({"grant": form.get("grant_type"), "outcome": "refused", "error": "invalid_dpop_proof",
                    "error_description": why, "dpop": False})  # fmt: skip
        return JSONResponse({"error": "invalid_dpop_proof", "error_description": why}, 400)
    if proof is not None or DPOP.require_nonce:
        try:
            oauth.dpop_jkt = DPOP.verify(proof, "POST", TOKEN_ENDPOINT)
        except DpopError as exc:
            if proof is not None or exc.error == "use_dpop_nonce":
                LOG.append({"grant": form.get("grant_type"), "outcome": "refused", "error": exc.error,
                            "error_description": exc.description, "dpop": proof is not None})  # fmt: skip
                return JSONResponse({"error": exc.error, "error_description": exc.description}, 400,
                                    headers=_nonce_headers())  # fmt: skip
    response: Response = SERVER.create_token_response(oauth)
    if response.status_code != 200:
        body = json.loads(bytes(response.body))
        LOG.append({"grant": form.get("grant_type"), "outcome": "refused", "error": body.get("error"),
                    "error_description": body.get("error_description"),
                    "dpop": proof is not None})  # fmt: skip
    response.headers.update(_nonce_headers())
    return response


def metadata(_: Request) -> JSONResponse:
    return JSONResponse({
        "issuer": ISSUER,
        "token_endpoint": TOKEN_ENDPOINT,
        "jwks_uri": ISSUER + "/jwks",
        "authorization_endpoint": ISSUER + "/authorize",
        "registration_endpoint": ISSUER + "/register",
        "response_types_supported": ["code"],
        "grant_types_supported": [JWT_BEARER, TOKEN_EXCHANGE, "client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "scopes_supported": SCOPES,
        "dpop_signing_alg_values_supported": list(DPOP_ALGS),
    })  # fmt: skip


async def register(request: Request) -> JSONResponse:
    LOG.append({"grant": "registration", "outcome": "refused", "error": "invalid_client_metadata"})
    why = "clients of this server are registered by its operator"
    return JSONResponse({"error": "invalid_client_metadata", "error_description": why}, 400)


def authorize(_: Request) -> JSONResponse:
    LOG.append({"grant": "authorization_code", "outcome": "refused", "error": "unsupported_response_type"})
    return JSONResponse({"error": "unsupported_response_type"}, 400)


app = Starlette(routes=[
    Route("/token", token, methods=["POST"]),
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/.well-known/openid-configuration", metadata),
    Route("/jwks", lambda _: JSONResponse(public_jwks(KEY))),
    Route("/register", register, methods=["POST"]),
    Route("/authorize", authorize),
    Route("/test/log", lambda _: JSONResponse(LOG)),
])  # fmt: skip

if __name__ == "__main__":
    serve(app, int(CONFIG["port"]))
