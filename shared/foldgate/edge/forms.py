"""Reading a small url-encoded HTML form, bounded: the console's and the per-user connect pages' POSTs."""

from __future__ import annotations

from urllib.parse import parse_qsl

from fastapi import Request

__all__ = ["read_form"]


async def read_form(
    request: Request, *, max_bytes: int, max_fields: int, encoding: str = "utf-8"
) -> dict[str, str] | None:
    """The form's fields (the first value of each), or None when the body is not a url-encoded form,
    is larger than ``max_bytes``, has more than ``max_fields`` fields or does not decode."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    body = await request.body()
    if len(body) > max_bytes:
        return None
    try:
        pairs = parse_qsl(body.decode(encoding), keep_blank_values=True, max_num_fields=max_fields)
    except (UnicodeDecodeError, ValueError):
        return None
    form: dict[str, str] = {}
    for key, value in pairs:
        form.setdefault(key, value)
    return form
