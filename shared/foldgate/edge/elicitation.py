"""URL-mode elicitation for a ``per_user`` upstream the caller has not connected yet.

The call path answers such a call with a tool error (``error_type: upstream_needs_consent``) carrying
a signed connect link (``connect_url``), and notes the link it signed (:mod:`foldgate.serve.consent`:
a link is never taken from a result, which an upstream could forge). Where the client declared
URL-mode elicitation, both MCP edges (the SDK glue and the SDK-free plain path) turn that error into
the protocol's own request to open the link, per protocol era:

* **2025-11-25** (the only handshake version with URL mode): the JSON-RPC error ``-32042``
  (URLElicitationRequiredError) with ``data.elicitations: [{mode: "url", elicitationId, url,
  message}]``. The client declares ``capabilities.elicitation.url`` in ``initialize``, but the edge is
  stateless (no ``Mcp-Session-Id``): a ``tools/call`` does not carry the capabilities. So the edge
  remembers, per credential (:attr:`Principal.stamp`), what the latest ``initialize`` declared, in
  this process only (:data:`CLIENTS`). A call reaching an instance that did not see the initialize
  (another Lambda instance) gets the tool error: degraded, never wrong.
* **2026-07-28** (stateless): every request carries the client's capabilities in ``_meta``; -32042
  is retired and the request for input is an ``InputRequiredResult`` (``resultType:
  "input_required"``) whose ``inputRequests`` hold one ``elicitation/create`` in URL mode. The client
  opens the link and retries the call with ``inputResponses``; a retry that still finds no grant (the
  user declined, or has not finished) gets the tool error rather than another round.
* Clients that declared no URL elicitation, and earlier versions, keep the tool error.

``notifications/elicitation/complete`` is not sent: the edge answers every request as one JSON body
with no session and no standalone stream, so after ``/oauth/callback`` there is nothing that could
carry it to the client. The spec makes the notification optional (clients must not wait for it): a
2025-11-25 client retries when its user is done; a 2026-07-28 client retries by itself.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from foldgate.edge.jsonrpc import CLIENT_CAPABILITIES_META
from foldgate.edge.protocol import MODERN_PROTOCOL_VERSIONS
from foldgate.errors import UpstreamConsentError
from foldgate.model.principal import Principal
from foldgate.model.rpc_body import RpcBody
from foldgate.serve.consent import ConsentLink
from foldgate.serve.results import error_body

__all__ = [
    "CLIENTS",
    "URL_ELICITATION_REQUIRED",
    "URL_ELICITATION_VERSION",
    "ConsentNeeded",
    "DeclaredCapabilities",
    "client_info",
    "consent_needed",
    "declares_url_elicitation",
    "elicitation_for",
    "input_methods",
    "note_initialize",
]

URL_ELICITATION_REQUIRED: Final = -32042
URL_ELICITATION_VERSION: Final = "2025-11-25"
_INPUT_KEY: Final = "foldgate.connect"
# How long an initialize's declaration is trusted, and how many credentials are remembered.
_MEMO_SECONDS: Final = 86_400.0
_MEMO_SIZE: Final = 10_000


def declares_url_elicitation(capabilities: Any) -> bool:
    """Whether client capabilities (an ``initialize`` or ``_meta`` object) declare URL elicitation."""
    if not isinstance(capabilities, Mapping):
        return False
    elicitation = capabilities.get("elicitation")
    return isinstance(elicitation, Mapping) and isinstance(elicitation.get("url"), Mapping)


def input_methods(capabilities: Any) -> frozenset[str]:
    """The requests for input an upstream may relay to a client with these capabilities (an
    ``initialize`` or ``_meta`` object): ``elicitation/create`` (form mode; URL mode as
    ``elicitation/create#url``), ``sampling/createMessage`` and ``roots/list``."""
    if not isinstance(capabilities, Mapping):
        return frozenset()
    methods = set()
    elicitation = capabilities.get("elicitation")
    # An empty elicitation object means form mode (2025-06-18); later ones name the modes.
    if isinstance(elicitation, Mapping) and (not elicitation or isinstance(elicitation.get("form"), Mapping)):
        methods.add("elicitation/create")
    if declares_url_elicitation(capabilities):
        methods.add("elicitation/create#url")
    if isinstance(capabilities.get("sampling"), Mapping):
        methods.add("sampling/createMessage")
    if isinstance(capabilities.get("roots"), Mapping):
        methods.add("roots/list")
    return frozenset(methods)


@dataclass(frozen=True, slots=True)
class _Declared:
    at: float
    url_elicitation: bool
    client: tuple[str, str, str]  # clientInfo name and version, the protocol version asked for
    inputs: frozenset[str] = frozenset()  # the requests for input it takes (see input_methods)


class DeclaredCapabilities:
    """What each credential's latest handshake-era ``initialize`` declared (this process only): URL
    elicitation, and the client's name, version and protocol version for the activity log."""

    def __init__(self, *, seconds: float = _MEMO_SECONDS, size: int = _MEMO_SIZE) -> None:
        self.seconds = seconds
        self.size = size
        self._seen: OrderedDict[str, _Declared] = OrderedDict()

    def note(self, stamp: str, capabilities: Any, client: tuple[str, str, str] = ("", "", "")) -> None:
        """Remember the declaration (a later initialize, with or without URL mode, replaces it)."""
        self._seen[stamp] = _Declared(
            time.monotonic(), declares_url_elicitation(capabilities), client, input_methods(capabilities)
        )
        self._seen.move_to_end(stamp)
        while len(self._seen) > self.size:
            self._seen.popitem(last=False)

    def _recent(self, stamp: str) -> _Declared | None:
        hit = self._seen.get(stamp)
        return hit if hit is not None and time.monotonic() - hit.at < self.seconds else None

    def url_elicitation(self, stamp: str) -> bool:
        """True when this credential's latest, recent initialize declared URL elicitation."""
        hit = self._recent(stamp)
        return hit is not None and hit.url_elicitation

    def inputs(self, stamp: str) -> frozenset[str]:
        """The requests for input this credential's latest, recent initialize declared it takes."""
        hit = self._recent(stamp)
        return hit.inputs if hit is not None else frozenset()

    def client(self, stamp: str) -> tuple[str, str, str]:
        """(name, version, protocol version) this credential's latest, recent initialize declared;
        empty strings where it is unknown (an initialize another instance served)."""
        hit = self._recent(stamp)
        return hit.client if hit is not None else ("", "", "")

    def clear(self) -> None:
        """Forget everything (tests; a process restart does the same)."""
        self._seen.clear()


CLIENTS: Final = DeclaredCapabilities()


def note_initialize(body: RpcBody, principal: Principal) -> None:
    """Remember what a handshake-era ``initialize`` in ``body`` declares (anything else: no-op)."""
    if not body.mentions(b'"initialize"'):
        return  # the common case costs one substring search
    msg = body.message
    if not isinstance(msg, dict) or msg.get("method") != "initialize":
        return
    params = msg.get("params")
    if isinstance(params, dict):
        CLIENTS.note(principal.stamp, params.get("capabilities"), _client_of(params))


# A client's name or version is kept to this many characters (a caller writes them).
_CLIENT_TEXT: Final = 100


def client_info(info: Any) -> tuple[str, str]:
    """(name, version) of a ``clientInfo`` object, cut short; empty when it is not one."""
    if not isinstance(info, Mapping):
        return "", ""
    name, version = info.get("name"), info.get("version")
    return (
        name[:_CLIENT_TEXT] if isinstance(name, str) else "",
        version[:_CLIENT_TEXT] if isinstance(version, str) else "",
    )


def _client_of(params: Mapping[str, Any]) -> tuple[str, str, str]:
    name, version = client_info(params.get("clientInfo"))
    protocol = params.get("protocolVersion")
    return name, version, protocol[:_CLIENT_TEXT] if isinstance(protocol, str) else ""


@dataclass(frozen=True, slots=True)
class ConsentNeeded:
    """A call refused until the caller connects their account at ``url``."""

    server: str
    url: str
    message: str

    @property
    def elicitation_id(self) -> str:
        """Opaque and unique per link (each link has its own expiry and signature)."""
        return hashlib.sha256(self.url.encode("utf-8")).hexdigest()[:32]

    def url_params(self, *, with_id: bool) -> dict[str, Any]:
        """The ``ElicitRequestURLParams`` wire object (``elicitationId`` is 2025-11-25 only)."""
        params: dict[str, Any] = {"message": self.message, "mode": "url", "url": self.url}
        if with_id:
            params["elicitationId"] = self.elicitation_id
        return params


def consent_needed(result: Any, links: Sequence[ConsentLink]) -> ConsentNeeded | None:
    """The connect request of a consent error result, when its link is one the call path signed
    during this request (``links``, see :mod:`foldgate.serve.consent`), else None. A result alone
    never suffices: an upstream can return text that looks exactly like foldgate's consent error."""
    body = error_body(result) if isinstance(result, dict) else None
    if body is None or body.get("error_type") != UpstreamConsentError.code:
        return None
    link = next((k for k in links if k.url == body.get("connect_url")), None)
    if link is None or not link.url.startswith(("https://", "http://")):
        return None
    message = f"Connect your own {link.server} account to let this call run, then retry."
    return ConsentNeeded(link.server, link.url, message)


def _modern_declares(params: Mapping[str, Any]) -> bool:
    meta = params.get("_meta")
    return isinstance(meta, Mapping) and declares_url_elicitation(meta.get(CLIENT_CAPABILITIES_META))


def elicitation_for(
    result: Any,
    links: Sequence[ConsentLink],
    version: str,
    params: Mapping[str, Any],
    principal: Principal,
) -> tuple[str, dict[str, Any]] | None:
    """How to answer a ``tools/call`` whose ``result`` is a consent error with one of ``links``, when
    the client takes URL elicitation: ``("error", <JSON-RPC error object>)`` at 2025-11-25,
    ``("result", <InputRequiredResult>)`` at 2026-07-28; None to answer ``result`` itself."""
    needed = consent_needed(result, links)
    if needed is None:
        return None
    if version in MODERN_PROTOCOL_VERSIONS:
        if not _modern_declares(params):
            return None
        responses = params.get("inputResponses")
        if isinstance(responses, Mapping) and _INPUT_KEY in responses:
            return None  # the retry after the user's answer: no second round, the tool error says why
        request = {"method": "elicitation/create", "params": needed.url_params(with_id=False)}
        return "result", {"inputRequests": {_INPUT_KEY: request}, "resultType": "input_required"}
    if version != URL_ELICITATION_VERSION or not CLIENTS.url_elicitation(principal.stamp):
        return None
    error = {
        "code": URL_ELICITATION_REQUIRED,
        "message": f"URL elicitation required: connect your {needed.server} account",
        "data": {"elicitations": [needed.url_params(with_id=True)]},
    }
    return "error", error
