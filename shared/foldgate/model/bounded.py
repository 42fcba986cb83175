"""One bound for every upstream-supplied text that reaches an agent or a log (error messages, reasons,
names): an upstream must not fill an agent's context or the operator's log bill. A text over its bound
is cut at a character boundary and says so: ``"… (N bytes cut)"``."""

from __future__ import annotations

from typing import Final

__all__ = ["MESSAGE_BYTES", "NAME_BYTES", "bounded"]

# An error message or a reason (a tool error the agent reads, a log line): enough for any real one.
MESSAGE_BYTES: Final = 1000
# A name an upstream gives (a tool, a prompt, a resource) where it is echoed in a message.
NAME_BYTES: Final = 200


def bounded(text: str, limit: int = MESSAGE_BYTES) -> str:
    """``text`` when its UTF-8 form is at most ``limit`` bytes; else its first ``limit`` bytes (never
    half a character) followed by ``… (N bytes cut)``. Lone surrogates count as 3 bytes, never raise."""
    if len(text) * 4 <= limit:  # the common case: short enough whatever it holds, nothing encoded
        return text
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text
    end = limit
    while end > 0 and raw[end] & 0xC0 == 0x80:  # back to a character's first byte: none cut in two
        end -= 1
    kept = raw[:end].decode("utf-8", "surrogatepass")
    return f"{kept}… ({len(raw) - end} bytes cut)"
