"""Every wire field of every message an upstream sends the gateway, and what the guard does with it: the
inventory a test holds against the ``mcp`` SDK's types, so a field the protocol adds fails the build
until someone decides how it is guarded.

How a field is handled:

* ``guarded``: every string in it is redacted and marked (keys of objects checked too);
* ``rebuilt``: the gateway relays its own copy of the message, built from the fields it knows;
  this one is not carried (``_meta`` of a notification, a progress token);
* ``dropped``: removed before anything sees it;
* ``label``: a short value the client dispatches on (a type, a role, a level, a MIME type), passed
  as is; ``number``: a number or a boolean; ``binary``: base64 bytes (an image, a blob), not text.

``_meta`` (of a result and of an item) is guarded like structured content, and dropped whole where
a key of it would change (it has no schema to keep, and an upstream's metadata is nothing the
agent needs); the ``_meta`` of a request for input is dropped.
"""

from __future__ import annotations

from typing import Final

__all__ = ["WIRE_FIELDS"]

_ITEM: Final = {"type": "label", "annotations": "guarded", "_meta": "guarded"}

WIRE_FIELDS: Final[dict[str, dict[str, str]]] = {
    # tools/call
    "CallToolResult": {"content": "guarded", "structuredContent": "guarded", "isError": "number",
                       "_meta": "guarded", "resultType": "label"},
    "TextContent": {**_ITEM, "text": "guarded"},
    "ImageContent": {**_ITEM, "data": "binary", "mimeType": "label"},
    "AudioContent": {**_ITEM, "data": "binary", "mimeType": "label"},
    "ResourceLink": {**_ITEM, "uri": "guarded", "name": "guarded", "title": "guarded",
                     "description": "guarded", "icons": "guarded", "mimeType": "label", "size": "number"},
    "EmbeddedResource": {**_ITEM, "resource": "guarded"},
    "TextResourceContents": {"uri": "guarded", "text": "guarded", "mimeType": "label", "_meta": "guarded"},
    "BlobResourceContents": {"uri": "guarded", "blob": "binary", "mimeType": "label", "_meta": "guarded"},
    # resources/read, prompts/get, completion/complete
    "ReadResourceResult": {"contents": "guarded", "_meta": "guarded", "resultType": "label",
                           "cacheScope": "label", "ttlMs": "number"},
    "GetPromptResult": {"description": "guarded", "messages": "guarded", "_meta": "guarded",
                        "resultType": "label"},
    "PromptMessage": {"role": "label", "content": "guarded"},
    "CompleteResult": {"completion": "guarded", "_meta": "guarded", "resultType": "label"},
    "Completion": {"values": "guarded", "total": "number", "hasMore": "number"},
    # notifications during a call (foldgate.upstream.relay rebuilds them, then guards what it carries)
    "ProgressNotificationParams": {"progressToken": "rebuilt", "progress": "number", "total": "number",
                                   "message": "guarded", "_meta": "rebuilt"},
    "LoggingMessageNotificationParams": {"level": "label", "logger": "guarded", "data": "guarded",
                                         "_meta": "rebuilt"},
    # requests for input relayed to the client: every param guarded, the upstream's _meta dropped
    "ElicitRequestFormParams": {"message": "guarded", "requestedSchema": "guarded", "mode": "guarded",
                                "task": "guarded", "_meta": "dropped"},
    "ElicitRequestURLParams": {"message": "guarded", "url": "guarded", "elicitationId": "guarded",
                               "mode": "guarded", "task": "guarded", "_meta": "dropped"},
    "CreateMessageRequestParams": {"messages": "guarded", "systemPrompt": "guarded",
                                   "includeContext": "guarded", "maxTokens": "guarded", "metadata": "guarded",
                                   "modelPreferences": "guarded",
                                   "stopSequences": "guarded", "task": "guarded", "temperature": "guarded",
                                   "toolChoice": "guarded", "tools": "guarded", "_meta": "dropped"},
}  # fmt: skip
