"""Try it: call a tool from the console exactly as one of the tenant's agent tokens would.

The call goes through :meth:`foldgate.serve.gateway.Gateway.call` on the direct surface (``/mcp/all``)
with the token's principal, so the token's view decides what it may see and call (its servers and
tier), the stored schema validates the arguments (the self-healing error on bad ones) and the approval
hold applies: there is no second call path to drift from the agents'. The operator names a token by
its id; its secret is never asked for (the store holds only hashes) and never shown.

A destructive tool is called only once the operator confirmed it (``confirm=yes`` in the form): the
first submission answers with what would be called instead. The call is recorded twice: as the call it
is (an activity event of the token, surface ``console``) and as an operator event (``tool.try``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from foldgate.auth.authority import TokenAuthority
from foldgate.edge.console.playground import token_principal
from foldgate.errors import FoldgateError
from foldgate.model.activity import Recorder
from foldgate.serve.gateway import Gateway
from foldgate.serve.recording import Observation, observing

__all__ = ["MAX_ARGUMENTS", "SURFACE", "Tried", "try_tool"]

# The arguments box takes at most this many characters (the console's forms are small).
MAX_ARGUMENTS: Final = 32_768
# The activity event's surface: a console call, not one of an MCP endpoint's.
SURFACE: Final = "console"


@dataclass(frozen=True, slots=True)
class Tried:
    """What a submission of the Try it form came to.

    ``error``: the form itself was refused (no call was made); ``confirm``: a destructive tool awaits
    confirmation (no call was made); otherwise ``result`` is the CallToolResult the agent would get,
    ``outcome`` how the activity log classes it."""

    token: str
    arguments: str
    error: str | None = None
    confirm: bool = False
    result: dict[str, Any] | None = None
    outcome: str = ""

    @property
    def called(self) -> bool:
        """Whether the gateway was called."""
        return self.result is not None

    @property
    def shown(self) -> str:
        """The result as the agent receives it (the JSON-RPC ``result`` member), indented."""
        return json.dumps(self.result, indent=2, ensure_ascii=False) if self.result is not None else ""


def _arguments(text: str) -> tuple[Any, str | None]:
    """The arguments the operator typed (any JSON value: the call path answers a non-object itself)."""
    if len(text) > MAX_ARGUMENTS:
        return None, f"arguments: at most {MAX_ARGUMENTS} characters"
    if not text.strip():
        return {}, None
    try:
        return json.loads(text), None
    except (ValueError, RecursionError) as exc:
        return None, f"arguments are not JSON: {exc}"[:300]


async def try_tool(
    gateway: Gateway,
    authority: TokenAuthority | None,
    recorder: Recorder,
    tenant: str,
    tool_id: str,
    form: dict[str, str],
) -> Tried:
    """Call ``tool_id`` (a published name) as the form's token with the form's arguments."""
    token_id = form.get("token", "")
    text = form.get("arguments", "")
    who = token_principal(authority, tenant, token_id)
    if isinstance(who, str):
        return Tried(token_id, text, error=who)
    arguments, problem = _arguments(text)
    if problem is not None:
        return Tried(token_id, text, error=problem)
    view = gateway.view(who)
    visible = view.resolve(tool_id)
    # Only a tool this token could call asks for confirmation: any other answer changes nothing upstream.
    if visible is not None and view.tier(visible) == "destructive" and form.get("confirm") != "yes":
        return Tried(token_id, text, confirm=True)
    observation = Observation(recorder, tenant, SURFACE, principal=who.who)
    observation.work("tools/call", tool_id)
    try:
        with observing(observation):
            result = await gateway.call(who, tool_id, arguments, surface="direct")
    except FoldgateError as exc:
        # The edge would answer a JSON-RPC error; the page says what it would carry.
        observation.failed(exc)
        observation.emit()
        return Tried(token_id, text, error=f"{exc.code}: {exc.message}")
    observation.emit()
    return Tried(token_id, text, result=result, outcome=observation.outcome or "")
