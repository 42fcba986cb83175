"""One error tree for the whole product; the edges (HTTP, MCP, CLI) map it to their protocols once."""

from __future__ import annotations

from typing import Any


class FoldgateError(Exception):
    """Base of every error foldgate raises on purpose. ``code`` is a stable machine-readable tag."""

    code = "internal_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class ConfigError(FoldgateError):
    """Tenant or process configuration is invalid; the message names the field and the fix."""

    code = "invalid_config"


class MissingExtraError(ConfigError):
    """An optional feature whose package is not installed; the message names the extra to install."""

    code = "missing_extra"

    def __init__(self, feature: str, extra: str, package: str) -> None:
        super().__init__(
            f"{feature} needs {package}, which is not installed: pip install 'foldgate[{extra}]'",
            extra=extra,
            package=package,
        )


class MissingSecretError(ConfigError):
    """A SecureString parameter that does not exist (as opposed to one that cannot be read)."""


class CorpusError(FoldgateError):
    """A recorded catalog or query file cannot be read."""

    code = "invalid_corpus"


class NotFoundError(FoldgateError):
    """A tool, server, cache entry or tenant is unknown or invisible to this caller (never says which)."""

    code = "not_found"


class AuthError(FoldgateError):
    """A credential is missing, malformed, unknown, expired or revoked (one message for all: no oracle)."""

    code = "unauthorized"


class InvalidRequestError(FoldgateError):
    """The caller's request is malformed: wrong types, too many ids, bad JSON."""

    code = "invalid_request"


class InvalidArgumentsError(FoldgateError):
    """Tool arguments fail the tool's real input schema (answered with the schema: self-healing)."""

    code = "invalid_params"


class UpstreamError(FoldgateError):
    """An upstream MCP server failed: unreachable, timed out, protocol error or tool error."""

    code = "upstream_error"


class UpstreamProtocolError(UpstreamError):
    """An upstream's JSON-RPC error that its client must see as it is, not as a tool result (e.g.
    -32021, a required client capability missing, with ``data.requiredCapabilities``): the edge
    answers with ``rpc_code``, the message and ``rpc_data`` (bounded and shaped by the upstream client)."""

    code = "upstream_protocol_error"

    def __init__(self, message: str, rpc_code: int, rpc_data: Any = None) -> None:
        super().__init__(message)
        self.rpc_code = rpc_code
        self.rpc_data = rpc_data


class TaskCancelledError(FoldgateError):
    """A durable task's call was cancelled before it ended (tasks/cancel)."""

    code = "cancelled"


class UpstreamTimeoutError(UpstreamError):
    """An upstream did not answer within its deadline."""

    code = "upstream_timeout"


class UpstreamDeadlineError(UpstreamTimeoutError):
    """An upstream was still working when the request's own deadline came (the function's time limit
    on the cloud path), before the server's ``timeout_s``: the same ``upstream_timeout`` to the agent,
    a ``deadline`` in the activity log."""


class UpstreamBusyError(UpstreamError):
    """An upstream already runs its ``max_concurrency`` calls and no slot freed within the queue timeout."""

    code = "upstream_busy"


class UpstreamConsentError(UpstreamError):
    """An OAuth upstream has no usable grant for this caller (never connected, revoked, or a larger
    scope needed): a person must connect it again; the message names the connect route."""

    code = "upstream_needs_consent"


class UpstreamAuthorizationError(UpstreamConsentError):
    """A token was refused by an identity provider or an upstream's authorization server (a machine
    grant: client credentials, workload identity; or a person's exchange: ``id_jag``,
    ``token_exchange``): the message names its answer (``invalid_grant``, ``invalid_scope``,
    ``access_denied``, ...). No consent link helps: the operator fixes the configuration, or an
    administrator of the IdP or the authorization server decides. Never a retry loop."""

    code = "upstream_needs_authorization"


class UpstreamInputError(UpstreamError):
    """The upstream asked for input during a call (elicitation, sampling) that nothing could carry to
    the client; it was refused at once."""

    code = "upstream_input_required"


class StoreError(FoldgateError):
    """The catalog store failed to read or write."""

    code = "store_error"


class ConflictError(StoreError):
    """A concurrent writer won a race (e.g. two indexers flipping the same tenant's pointer)."""

    code = "conflict"


class WrongVariantError(InvalidRequestError):
    """A call_tool_* variant that does not match the tool's permission tier."""

    code = "wrong_variant"


class ToolPendingApprovalError(InvalidRequestError):
    """A new tool of an untrusted server, not callable until an operator approves it."""

    code = "tool_pending_approval"


class ToolChangedError(InvalidRequestError):
    """A tool whose definition changed upstream, not callable until an operator approves it."""

    code = "tool_changed"


class InsufficientScopeError(FoldgateError):
    """A valid OAuth access token whose scope is too small here (403); ``scope`` names what is needed."""

    code = "insufficient_scope"

    def __init__(self, message: str, *, scope: str) -> None:
        super().__init__(message, scope=scope)
        self.scope = scope


class SandboxUnavailableError(FoldgateError):
    """Agent code cannot run safely in this process (its hardening did not take effect)."""

    code = "sandbox_unavailable"


class ResultBlockedError(FoldgateError):
    """An upstream's answer was withheld by the tenant's result guard (``guard: block``); the message
    names the rules that fired, never the text that fired them."""

    code = "result_blocked"
