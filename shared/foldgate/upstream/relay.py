"""What an upstream sends back *during* a call, and where it goes: progress and log notifications, and
requests for input (elicitation, sampling).

The edge (or a task runner) installs a :class:`Relay` around a call (:func:`relaying`); the plain
session reads it while it sends the call and reads the answer stream (``foldgate.upstream.plain_session``):

* **Progress.** The call is sent with a ``progressToken`` of the gateway's own (never the client's:
  the upstream must not learn or choose it); each ``notifications/progress`` for that token is
  rebuilt from its numeric fields and a bounded message and relayed with the *client's* token, in the
  order the upstream sent it. ``on_progress`` hears each one too (:func:`listening`: a task runner
  keeps the latest as the task's ``statusMessage``).
* **Logs.** ``notifications/message`` is rebuilt (a known level, a bounded logger name prefixed with
  the server's, data of bounded size) and relayed.
* **Requests for input.** ``elicitation/create`` and ``sampling/createMessage`` go to ``ask`` when the
  client takes them on its stream; a 2026-07-28 upstream's ``input_required`` result is kept for the
  edge to seal when the client takes it (``input_required``), or, for a handshake-era client that
  takes its requests on its stream, asked there and the call retried with the replies
  (:meth:`Relay.answer_input_required`, at most ``MAX_INPUT_ROUNDS`` rounds). Anything else is *refused*: the
  upstream gets an error at once (never a hang) and the call ends in :class:`UpstreamInputError`,
  naming what the upstream asked for.

Everything relayed passes the result guard first (``screen``, installed by the serving side around
each call: :func:`foldgate.serve.guarding.relay_screen`): a progress message, a log's data and a
request's params are redacted and marked like a result, and under a ``block`` policy what fired is
withheld (the progress is relayed without its message, the log is dropped, the request refused).

Without a relay (the indexer, the cloud path without a stream) notifications are dropped and every
request for input is refused, as above. Everything an upstream sends is hostile input: nothing of it
is forwarded unbounded or unchecked.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import secrets
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from foldgate.errors import UpstreamError, UpstreamInputError
from foldgate.model.scoped import scoped

__all__ = [
    "INPUT_METHODS",
    "MAX_INPUT_ROUNDS",
    "URL_ELICITATION",
    "WITHHELD",
    "Progress",
    "Relay",
    "Screen",
    "current_relay",
    "handshake_relay",
    "listening",
    "relaying",
    "takes",
]

# The requests for input a gateway can carry to its client (roots/list only to a client that declared
# roots: its own files, which the gateway does not have; ping is answered by the session itself).
INPUT_METHODS: Final = frozenset({"elicitation/create", "sampling/createMessage", "roots/list"})
# What a client takes, as ``asks`` and ``input_required`` name it: a method, and URL-mode elicitation
# apart (a client declares form and URL mode separately).
URL_ELICITATION: Final = "elicitation/create#url"
_ELICITATION_MODES: Final = (("elicitation/create", "form"), (URL_ELICITATION, "url"))
LOG_LEVELS: Final = frozenset(
    {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
)
LOG_LEVEL_META: Final = "io.modelcontextprotocol/logLevel"
_MESSAGE_CHARS: Final = 1_000
_LOGGER_CHARS: Final = 200
# A relayed log message's data, or a relayed request's params, serialized: at most this many bytes.
MAX_LOG_BYTES: Final = 64 * 1024
MAX_ASK_BYTES: Final = 256 * 1024
_ASKED_CHARS: Final = 300
# A handshake-era client's input_required answered on its stream: at most this many requests per
# round, keys of at most this many characters, and this many rounds per call (then an error).
MAX_INPUT_REQUESTS: Final = 16
_KEY_CHARS: Final = 200
MAX_INPUT_ROUNDS: Final = 4


@dataclass(frozen=True, slots=True)
class Progress:
    """One progress notification as relayed (already checked)."""

    progress: float
    total: float | None = None
    message: str | None = None


class _Withheld:
    """What a screen answers for a value the guard withholds."""


WITHHELD: Final = _Withheld()
# The guard over what an upstream (named) sends during a call: the value as it may be relayed, or
# WITHHELD.
Screen = Callable[[str, Any], Any]
Notify = Callable[[dict[str, Any]], Awaitable[None]]
# Sends a request to the client; returns the reply's ``result`` or ``error`` member (as one-key dict).
Ask = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
OnProgress = Callable[[Progress], Awaitable[None]]
_tokens = itertools.count(1)


@dataclass(slots=True)
class Relay:
    """What may flow back to the caller of one upstream call, and what could not.

    ``notify`` writes a JSON-RPC notification to the client's response stream (None: nowhere to
    write); ``progress_token`` is the client's own; ``ask`` sends a request to the client and returns
    its reply (for the methods in ``asks``); ``input_required`` are the methods the client takes as a
    2026-07-28 ``input_required`` result; ``resume`` is what a retry carries back to the upstream
    (``inputResponses`` and the upstream's own ``requestState``, from a sealed state the edge opened).
    """

    notify: Notify | None = None
    progress_token: str | int | None = None
    on_progress: OnProgress | None = None
    ask: Ask | None = None
    asks: frozenset[str] = frozenset()
    input_required: frozenset[str] = frozenset()
    resume: Mapping[str, Any] | None = None
    # The requests for input the client declared (a 2026-07-28 client names them in every request's
    # _meta), whether or not this path can carry them; None when not known (a handshake-era client).
    declared: frozenset[str] | None = None
    # The lowest log level the client wants relayed (a 2026-07-28 upstream sends logs only when asked).
    log_level: str | None = None
    refused: list[str] = field(default_factory=list)
    # The result guard over everything relayed (None: relayed as checked, unguarded: the indexer).
    screen: Screen | None = None
    # The gateway's own token for the upstream (see ``upstream_token``), made when first asked for.
    _token: str | None = field(default=None, repr=False, compare=False)

    @property
    def upstream_token(self) -> str:
        """The gateway's own progress token for the upstream: unguessable, so no other request's stream
        can match it. Made on first use: most calls ask for no progress, and each call's relay is new."""
        if self._token is None:
            self._token = f"fg-{next(_tokens)}-{secrets.token_hex(8)}"
        return self._token

    @property
    def wants_progress(self) -> bool:
        """Whether the upstream should be asked for progress (someone listens)."""
        return self.on_progress is not None or (self.notify is not None and self.progress_token is not None)

    def for_call(self, on_progress: OnProgress | None = None, screen: Screen | None = None) -> Relay:
        """This relay for one upstream call, with ``on_progress`` heard as well and ``screen`` (when
        given) guarding what is relayed (a fresh refusal list and upstream token: each call's are its
        own)."""
        if on_progress is None:
            listener = self.on_progress
        elif self.on_progress is None:
            listener = on_progress
        else:
            first, second = self.on_progress, on_progress

            async def listener(progress: Progress) -> None:
                await first(progress)
                await second(progress)

        return Relay(
            notify=self.notify,
            progress_token=self.progress_token,
            on_progress=listener,
            ask=self.ask,
            asks=self.asks,
            input_required=self.input_required,
            resume=self.resume,
            declared=self.declared,
            log_level=self.log_level,
            screen=screen if screen is not None else self.screen,
        )

    def screened(self, server: str, value: Any) -> Any:
        """``value`` as it may be relayed from ``server`` (WITHHELD when the guard withholds it)."""
        return value if self.screen is None else self.screen(server, value)

    def offered_capabilities(self) -> dict[str, Any] | None:
        """The client capabilities a 2026-07-28 upstream is told of for this call: exactly those for
        input the client declared (SEP-2322: nothing when it declared nothing, so an upstream that
        needs one refuses with -32021 naming it, which the client sees), plus any its stream takes.
        A declared request this path cannot carry is still offered: the upstream asks, is told no at
        once, and the call's error names what it asked (:func:`refusal`). None when nothing is known
        of the client (a handshake-era client taking nothing on a stream): the gateway's own then."""
        methods = self.input_required | self.asks | (self.declared or frozenset())
        if not methods and self.declared is None:
            return None
        offered: dict[str, Any] = {}
        modes: dict[str, Any] = {mode: {} for method, mode in _ELICITATION_MODES if method in methods}
        if modes:
            offered["elicitation"] = modes
        if "sampling/createMessage" in methods:
            offered["sampling"] = {}
        if "roots/list" in methods:
            offered["roots"] = {}
        return offered

    def call_meta(self, *, modern: bool) -> dict[str, Any]:
        """What the call's ``_meta`` gets: the gateway's progress token when someone listens; for a
        2026-07-28 upstream, the log level the client asked for when there is a stream to relay to."""
        meta: dict[str, Any] = {"progressToken": self.upstream_token} if self.wants_progress else {}
        if modern and self.notify is not None and self.log_level in LOG_LEVELS:
            meta[LOG_LEVEL_META] = self.log_level
        return meta

    async def notification(self, server: str, message: Mapping[str, Any]) -> None:
        """Relay one notification an upstream sent on a call's stream (anything unknown is dropped)."""
        method, params = message.get("method"), message.get("params")
        if not isinstance(params, Mapping):
            return
        if method == "notifications/progress" and params.get("progressToken") == self.upstream_token:
            progress = _progress(params)
            if progress is None:
                return
            if progress.message is not None:
                said = self.screened(server, progress.message)
                kept = said if isinstance(said, str) else None
                progress = Progress(progress.progress, progress.total, kept)
            if self.on_progress is not None:
                await self.on_progress(progress)
            if self.notify is not None and self.progress_token is not None:
                await self.notify(_progress_message(self.progress_token, progress))
        elif method == "notifications/message" and self.notify is not None:
            relayed = _log_message(server, params)
            if relayed is not None:
                relayed["params"] = self.screened(server, relayed["params"])
                if relayed["params"] is not WITHHELD:
                    await self.notify(relayed)

    async def request(self, server: str, message: Mapping[str, Any]) -> dict[str, Any]:
        """The reply (a JSON-RPC ``result`` or ``error`` member) to a request an upstream made during a
        call: relayed to the client when it takes it, else refused at once and remembered."""
        method = message.get("method")
        params = message.get("params")
        if method == "ping":
            return {"result": {}}
        if method not in INPUT_METHODS:
            return {"error": {"code": -32601, "message": f"Method not found: the gateway relays no {method}"}}
        params = dict(params) if isinstance(params, Mapping) else {}
        params.pop("_meta", None)  # the upstream's own metadata is not the client's business
        params = self.screened(server, params)
        if params is WITHHELD:
            self.refused.append(f"{method}, withheld by the gateway's guard")
            return {"error": {"code": -32600, "message": "The gateway's guard withheld this request"}}
        if self.ask is not None and takes(self.asks, str(method), params) and _size(params) <= MAX_ASK_BYTES:
            try:
                return await self.ask(str(method), params)
            except UpstreamInputError as exc:  # the client could not be asked after all
                self.refused.append(exc.message)
        else:
            self.refused.append(describe_request(str(method), params))
        return {"error": {"code": -32600, "message": "The gateway's client cannot answer this request"}}

    def check_input_required(self, server: str, tool: str, result: Mapping[str, Any]) -> None:
        """Raise UpstreamInputError unless the client takes every request of an ``input_required``
        result (the edge seals it); the upstream's requests are named in the error."""
        requests = result.get("inputRequests")
        if not isinstance(requests, Mapping) or not requests:
            raise UpstreamError(f"{server}: {tool} answered input_required without inputRequests")
        asked = []
        carried = True
        for value in requests.values():
            method = value.get("method") if isinstance(value, Mapping) else None
            params = value.get("params") if isinstance(value, Mapping) else None
            params = params if isinstance(params, Mapping) else {}
            asked.append(describe_request(str(method), params))
            carried = carried and takes(self.input_required, str(method), params)
            carried = carried and _size(value) <= MAX_ASK_BYTES
        if not carried:
            raise refusal(server, tool, asked)

    async def answer_input_required(
        self, server: str, tool: str, result: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """For an upstream's ``input_required`` result: None when the edge relays it as it is (a
        2026-07-28 client takes every request; see :meth:`check_input_required`), else what the retry
        carries back to the upstream (``inputResponses`` and its own ``requestState``) once each request
        was asked of a handshake-era client on its stream (``ask``) and answered. The upstream is
        stateless, so nothing waits across requests. Raises UpstreamInputError when the client cannot
        take a request or does not answer one with a result."""
        requests = result.get("inputRequests")
        if self.input_required or not self.asks or self.ask is None:
            self.check_input_required(server, tool, result)
            return None
        if not isinstance(requests, Mapping) or not requests:
            raise UpstreamError(f"{server}: {tool} answered input_required without inputRequests")
        asked: list[tuple[str, str, dict[str, Any]]] = []
        for key, value in requests.items():
            method = value.get("method") if isinstance(value, Mapping) else None
            params = value.get("params") if isinstance(value, Mapping) else None
            params = {k: v for k, v in params.items() if k != "_meta"} if isinstance(params, Mapping) else {}
            params = self.screened(server, params)
            if params is WITHHELD:
                raise refusal(server, tool, [f"{method}, withheld by the gateway's guard"])
            asked.append((str(key), str(method), params))
        described = [describe_request(method, params) for _, method, params in asked]
        for key, method, params in asked:
            fits = len(asked) <= MAX_INPUT_REQUESTS and len(key) <= _KEY_CHARS and method in INPUT_METHODS
            if not (fits and takes(self.asks, method, params) and _size(params) <= MAX_ASK_BYTES):
                raise refusal(server, tool, described)
        responses: dict[str, Any] = {}
        for (key, method, params), what in zip(asked, described, strict=True):
            answer = (await self.ask(method, params)).get("result")
            # The client's reply goes to the upstream: an object of bounded size, or the call ends here.
            if not isinstance(answer, Mapping) or _size(answer) > MAX_ASK_BYTES:
                raise UpstreamInputError(
                    f"{server}: {tool} asked for input the client did not give ({what}); the call ends here.",
                    asked=[what],
                )
            responses[key] = dict(answer)
        resume: dict[str, Any] = {"inputResponses": responses}
        state = result.get("requestState")
        if isinstance(state, str):
            resume["requestState"] = state
        return resume


def takes(methods: frozenset[str], method: str, params: Mapping[str, Any]) -> bool:
    """Whether a client that takes ``methods`` can be given this request (URL mode apart)."""
    if method == "elicitation/create" and params.get("mode") == "url":
        return URL_ELICITATION in methods
    return method in methods


def refusal(server: str, tool: str, asked: list[str]) -> UpstreamInputError:
    """The error a call ends in when the upstream asked for input the client could not be given."""
    what = "; ".join(asked[:3])
    return UpstreamInputError(
        f"{server}: {tool} asked for input this client cannot receive here ({what}). Retry from a "
        "client that declares the elicitation or sampling capability, over a streamed response "
        "(foldgate serve, or the cloud's streaming URL) or at protocol 2026-07-28; the upstream was "
        "told no at once.",
        asked=asked[:3],
    )


def describe_request(method: str, params: Mapping[str, Any]) -> str:
    """A short, bounded description of a request for input (for a tool error the agent reads)."""
    if method == "elicitation/create":
        text = params.get("message")
        said = f": {str(text)[:_ASKED_CHARS]!r}" if isinstance(text, str) else ""
        mode = "URL" if params.get("mode") == "url" else "form"
        return f"elicitation/create, user input ({mode}){said}"
    if method == "sampling/createMessage":
        return "sampling/createMessage, a completion from the client's model"
    if method == "roots/list":
        return "roots/list, the client's roots"
    return f"{method[:80]}, a request the gateway does not relay"


_RELAY: ContextVar[Relay | None] = ContextVar("foldgate_relay", default=None)


def relaying(relay: Relay | None) -> scoped[Relay | None]:
    """Within the block, upstream calls relay through ``relay`` (None: through nothing)."""
    return scoped(_RELAY, relay)


@contextlib.contextmanager
def listening(on_progress: OnProgress) -> Iterator[Relay]:
    """Within the block, every upstream call's progress is heard by ``on_progress`` too (after the
    relay already installed, if any): the hook a task runner keeps a task's ``statusMessage`` with."""
    with relaying((current_relay() or Relay()).for_call(on_progress)) as relay:
        assert relay is not None
        yield relay


def handshake_relay(relay: Relay | None) -> bool:
    """Whether ``relay`` is a 2025-era client's that takes requests for input on its stream (it
    declared sampling, elicitation or roots and the path can ask it): such a call is best sent to an
    upstream at a handshake-era version (see ``foldgate.upstream.client``)."""
    return relay is not None and relay.ask is not None and bool(relay.asks) and not relay.input_required


def current_relay() -> Relay | None:
    """The relay of the running call, if any."""
    return _RELAY.get()


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _progress(params: Mapping[str, Any]) -> Progress | None:
    progress = _number(params.get("progress"))
    if progress is None:
        return None
    total = _number(params.get("total"))
    message = params.get("message")
    return Progress(progress, total, message[:_MESSAGE_CHARS] if isinstance(message, str) else None)


def _progress_message(token: str | int, progress: Progress) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": token, "progress": _compact(progress.progress)}
    if progress.total is not None:
        params["total"] = _compact(progress.total)
    if progress.message is not None:
        params["message"] = progress.message
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


def _log_message(server: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
    level = params.get("level")
    if level not in LOG_LEVELS or "data" not in params:
        return None
    data = params["data"]
    if _size(data) > MAX_LOG_BYTES:
        data = f"(a log message of more than {MAX_LOG_BYTES} bytes from {server}, not relayed)"
    logger = params.get("logger")
    name = f"{server}/{logger[:_LOGGER_CHARS]}" if isinstance(logger, str) and logger else server
    relayed = {"level": level, "logger": name, "data": data}
    return {"jsonrpc": "2.0", "method": "notifications/message", "params": relayed}


def _compact(value: float) -> float | int:
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _size(value: Any) -> int:
    try:
        return len(json.dumps(value, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError):
        return MAX_ASK_BYTES + 1
