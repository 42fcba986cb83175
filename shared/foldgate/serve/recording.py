"""What one request did, gathered across layers and handed to the activity recorder exactly once.

The edge opens an :class:`Observation` per MCP request (:func:`observing`): who asked (tenant,
principal, client), on which surface, how big the request was, when it started. The layers below fill
in what only they know, through the context variable and without any signature in between changing:
the method and what it named (the edge's handlers), the server, tool and tier (the call path), how it
ended (wherever the answer is made), the time spent waiting for the upstream, whether the result was
cut to ``read_cache``. When the answer has been sent the edge emits it: one
:class:`~foldgate.model.activity.ActivityEvent` for a request that did work (``tools/call``,
``resources/read``, ``prompts/get``), none for the rest (listings, ``initialize``, ``ping``).

A ``/mcp/code`` run makes many calls in one request: each is an observation of its own
(:func:`observing_call`), emitted when the call ends, and the run itself is not (it is
:meth:`Observation.suppress`-ed): its calls are what it did.

Building an event costs microseconds: no copies of arguments or results, no JSON encoding. Bytes are
what the edge read and sent for the request; a call inside a code run never crosses HTTP, so its bytes
are estimated (:func:`approx_chars`: characters of the arguments and of the result's text).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any, Final

from foldgate.config.tenant import TenantConfig
from foldgate.errors import (
    FoldgateError,
    UpstreamAuthorizationError,
    UpstreamBusyError,
    UpstreamConsentError,
    UpstreamDeadlineError,
    UpstreamError,
    UpstreamTimeoutError,
)
from foldgate.model.activity import ActivityEvent, NullRecorder, Outcome, Recorder
from foldgate.model.trace_context import current_trace_id
from foldgate.serve.results import error_body

__all__ = [
    "WORK_METHODS",
    "Observation",
    "activity_arguments",
    "approx_chars",
    "current",
    "observing",
    "observing_call",
    "outcome_of_code",
    "outcome_of_error",
    "result_chars",
    "upstream_timer",
]

log = logging.getLogger(__name__)
# Recorder failures of this process (the first one is logged with its traceback, later ones in a line).
_RECORDER_FAILURES: Final = itertools.count()

# The methods whose requests do work: each gets one event.
WORK_METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get"})
# An event's detail and names are cut here: they come from callers and upstreams (hostile input).
_MAX_TEXT: Final = 200
# approx_chars stops counting after this many values: a bounded estimate, never a walk of a huge tree.
_APPROX_NODES: Final = 256

# Errors raised before any request reached the upstream: ``upstream_ms`` stays null for them.
_SENT_NOTHING: Final = (UpstreamConsentError, UpstreamBusyError)

# The gateway's error codes (FoldgateError.code, a result's error_type) by outcome class.
_OUTCOME_OF_CODE: Final[dict[str, Outcome]] = {
    "invalid_params": "invalid_arguments",
    "invalid_request": "invalid_arguments",
    "not_found": "not_found",
    # A call_tool_* variant other than the tool's tier: refused by the permission gate it is.
    "wrong_variant": "denied",
    "unauthorized": "denied",
    "insufficient_scope": "denied",
    "tool_pending_approval": "held",
    "tool_changed": "held",
    "upstream_needs_consent": "needs_consent",
    # The IdP or the upstream's authorization server refused this person a token: its policy.
    "upstream_needs_authorization": "denied",
    "upstream_timeout": "upstream_timeout",
    # The server's max_concurrency was full for its whole queue timeout: foldgate's own limit.
    "upstream_busy": "rate_limited",
    "upstream_error": "upstream_error",
    # The tenant's result guard withheld the upstream's answer (guard: block).
    "result_blocked": "denied",
}


def outcome_of_code(code: str) -> Outcome:
    """The outcome class of one of foldgate's error codes (anything unknown is an internal error)."""
    return _OUTCOME_OF_CODE.get(code, "internal_error")


def outcome_of_error(exc: BaseException) -> Outcome:
    """The outcome class of an error foldgate raised (or any other exception: an internal error)."""
    if isinstance(exc, UpstreamDeadlineError):
        return "deadline"
    if isinstance(exc, UpstreamTimeoutError):
        return "upstream_timeout"
    if isinstance(exc, UpstreamAuthorizationError):
        return "denied"
    if isinstance(exc, UpstreamConsentError):
        return "needs_consent"
    if isinstance(exc, UpstreamBusyError):
        return "rate_limited"
    if isinstance(exc, UpstreamError):
        return "upstream_error"
    if isinstance(exc, FoldgateError):
        return outcome_of_code(exc.code)
    return "internal_error"


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def activity_arguments(
    config: TenantConfig, arguments: Any, *, tenant: str, key: Callable[[], bytes] | None
) -> Any:
    """What an event keeps of a call's arguments: nothing, unless the tenant chose otherwise.

    The one place a call's raw arguments meet the activity log. By default (``activity.arguments:
    none``) nothing is kept; ``hashed`` or ``redacted`` turn them into a keyed digest or a value-free
    shape (:mod:`foldgate.serve.activity_arguments`), made with ``key()`` (None: nothing is kept).
    """
    policy = config.activity.arguments
    if policy == "none" or key is None:
        return None
    # Loaded only for a tenant that keeps its calls' arguments: every other call never pays for it.
    from foldgate.serve.activity_arguments import recorded_arguments

    return recorded_arguments(arguments, policy, key=key(), tenant=tenant)


def result_chars(result: Any) -> int:
    """Characters of a CallToolResult's text content: the cheap size of a result that never crosses
    HTTP (a call inside a code run). No encoding, one pass over the content list."""
    content = result.get("content") if isinstance(result, Mapping) else None
    if not isinstance(content, list):
        return 0
    total = 0
    for item in content:
        if isinstance(item, Mapping):
            text = item.get("text")
            if isinstance(text, str):
                total += len(text)
    return total


def approx_chars(value: Any) -> int:
    """About how many characters ``value`` takes as JSON: strings, keys and separators counted, other
    scalars a few each; at most ``_APPROX_NODES`` values are visited (then it is a lower bound)."""
    total = 0
    stack = [value]
    seen = 0
    while stack and seen < _APPROX_NODES:
        item = stack.pop()
        seen += 1
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, Mapping):
            total += 2 + len(item)
            for key, inner in itertools.islice(item.items(), _APPROX_NODES - seen):
                total += len(key) + 3 if isinstance(key, str) else 5
                stack.append(inner)
        elif isinstance(item, list | tuple):
            total += 2 + len(item)
            stack.extend(item[: _APPROX_NODES - seen])
        else:
            total += 5
    return total


class Observation:
    """One request (or one call of a code run) as it is being answered. Mutable, per request."""

    __slots__ = (
        "arguments",
        "client_name",
        "client_version",
        "cut",
        "detail",
        "emitted",
        "guard",
        "method",
        "outcome",
        "principal",
        "protocol",
        "recorder",
        "request_bytes",
        "request_id",
        "request_ids",
        "response_bytes",
        "server",
        "started",
        "suppressed",
        "surface",
        "tenant",
        "tier",
        "tool",
        "upstream_ms",
    )  # fmt: skip

    def __init__(
        self,
        recorder: Recorder,
        tenant: str,
        surface: str,
        *,
        principal: str = "",
        request_id: str = "",
        request_ids: Callable[[], str] | None = None,
        started: float | None = None,
        request_bytes: int = 0,
    ) -> None:
        self.recorder = recorder
        self.tenant = tenant
        self.surface = surface
        self.principal = principal
        # The request id, or where to get it when an event is built (most requests record nothing).
        self.request_id = request_id
        self.request_ids = request_ids
        self.started = time.perf_counter() if started is None else started
        self.request_bytes = request_bytes
        self.response_bytes = 0
        self.client_name = self.client_version = self.protocol = ""
        self.method = self.server = self.tool = self.tier = self.detail = ""
        self.outcome: Outcome | None = None
        self.upstream_ms: float | None = None
        self.cut = False
        self.arguments: Any = None
        # The result guard's findings: counts by rule id, never a value (None: nothing fired).
        self.guard: dict[str, int] | None = None
        self.suppressed = False
        self.emitted = False

    # ---- what the layers note -------------------------------------------------------------------

    def work(self, method: str, name: str) -> None:
        """The request does work: ``method`` on ``name`` (a tool, resource URI or prompt)."""
        self.method = method
        self.tool = _cut(name) if isinstance(name, str) else ""

    def target(self, server: str, tool: str, tier: str = "") -> None:
        """The upstream server, tool (or resource/prompt) and tier the request resolved to."""
        self.server, self.tool, self.tier = server, _cut(tool), tier

    def ended(self, outcome: Outcome, detail: str = "") -> None:
        """How the request ended; the first layer to say so wins (it knows best: the call path says
        ``tool_error`` before the edge could mistake it for anything else)."""
        if self.outcome is None:
            self.outcome = outcome
            self.detail = _cut(detail)

    def overruled(self, outcome: Outcome, detail: str) -> None:
        """The edge found the answer unusable after the call path said how it ended (an upstream's
        malformed result, answered as an error): that is how it ended."""
        self.outcome, self.detail = outcome, _cut(detail)

    def failed(self, exc: BaseException) -> None:
        """The request ended in ``exc`` (its outcome class and foldgate's own message, never a value)."""
        if isinstance(exc, FoldgateError):
            self.ended(outcome_of_error(exc), exc.code)
        else:
            self.ended("internal_error", type(exc).__name__)

    def answered(self, result: Any) -> None:
        """The request ended with a result the gateway made (a tool error it wrote, or a success):
        classified by its ``error_type``. Results an upstream made are classified by the call path
        before this (:meth:`ended` wins), so an upstream's text never decides an outcome."""
        if self.outcome is not None:
            return
        if not isinstance(result, Mapping) or not result.get("isError"):
            self.ended("ok")
            return
        body = error_body(dict(result))
        code = str(body.get("error_type", "")) if body is not None else ""
        self.ended(outcome_of_code(code) if code else "internal_error", code)

    def add_upstream(self, ms: float) -> None:
        """Time spent waiting for an upstream (summed over the request's upstream requests)."""
        self.upstream_ms = ms if self.upstream_ms is None else self.upstream_ms + ms

    def suppress(self) -> None:
        """This request's work is recorded by its parts (a code run's calls): no event of its own."""
        self.suppressed = True

    # ---- the event ------------------------------------------------------------------------------

    def child(self, surface: str | None = None) -> Observation:
        """An observation of one part of this request (a code run's call), with its caller facts."""
        part = Observation(
            self.recorder, self.tenant, surface or self.surface, principal=self.principal,
            request_id=self.request_id, request_ids=self.request_ids,
        )  # fmt: skip
        part.client_name, part.client_version, part.protocol = (
            self.client_name, self.client_version, self.protocol,
        )  # fmt: skip
        return part

    def event(self) -> ActivityEvent:
        """The event as observed so far (an unfinished request counts as an internal error)."""
        return ActivityEvent(
            tenant=self.tenant,
            method=self.method,
            surface=self.surface,
            outcome=self.outcome or "internal_error",
            request_id=self.request_id or (self.request_ids() if self.request_ids is not None else ""),
            principal=self.principal,
            client_name=self.client_name,
            client_version=self.client_version,
            protocol=self.protocol,
            server=self.server,
            tool=self.tool,
            tier=self.tier,
            gateway_ms=round((time.perf_counter() - self.started) * 1000, 3),
            upstream_ms=round(self.upstream_ms, 3) if self.upstream_ms is not None else None,
            request_bytes=self.request_bytes,
            response_bytes=self.response_bytes,
            cut_to_read_cache=self.cut,
            trace_id=current_trace_id(),
            detail=self.detail,
            arguments=self.arguments,
            guard=self.guard,
        )

    def emit(self) -> None:
        """Hand the event to the recorder, once, when the request did work (never raises)."""
        if self.emitted or self.suppressed or self.method not in WORK_METHODS:
            return
        self.emitted = True
        if isinstance(self.recorder, NullRecorder):
            return  # recording is off: no event is built
        try:
            self.recorder.record(self.event())
        except Exception as exc:  # a recorder must not raise; if one does, the call it describes goes on
            # A recorder that breaks breaks on every request: its first traceback is enough.
            first = next(_RECORDER_FAILURES) == 0
            log.warning("the activity recorder failed (%s); the event is lost", type(exc).__name__,
                        exc_info=first)  # fmt: skip


_CURRENT: ContextVar[Observation | None] = ContextVar("foldgate_observation", default=None)


def current() -> Observation | None:
    """The running request's observation (None outside one: benches, the console's playground)."""
    return _CURRENT.get()


class observing:
    """Within the block, the layers below note what they do on ``observation``. A class rather than
    a generator: it runs on every request, and this costs a fraction of contextlib's machinery."""

    __slots__ = ("_observation", "_token")

    def __init__(self, observation: Observation) -> None:
        self._observation = observation

    def __enter__(self) -> Observation:
        self._token = _CURRENT.set(self._observation)
        return self._observation

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


@contextlib.contextmanager
def observing_call() -> Iterator[Observation | None]:
    """One call of a code run: its own observation (of the running request's caller), emitted when
    the block ends, however it ends; None (and nothing emitted) outside an observed request."""
    parent = _CURRENT.get()
    if parent is None:
        yield None
        return
    part = parent.child()
    token = _CURRENT.set(part)
    try:
        yield part
    except BaseException as exc:
        if isinstance(exc, Exception):
            part.failed(exc)
        else:
            # Cancelled: the run ended (its time limit or the request's) while the call was waiting.
            part.ended("deadline", "cancelled")
        raise
    finally:
        _CURRENT.reset(token)
        part.emit()


class upstream_timer:
    """Time the block as spent waiting for the upstream, on the running request's observation (a
    class for the reason :class:`observing` is one)."""

    __slots__ = ("_observation", "_started")

    def __enter__(self) -> None:
        self._observation = _CURRENT.get()
        self._started = time.perf_counter()

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        # A call refused before any request went out (no grant yet, no free slot) waited on no upstream.
        if self._observation is not None and not isinstance(exc, _SENT_NOTHING):
            self._observation.add_upstream((time.perf_counter() - self._started) * 1000)
