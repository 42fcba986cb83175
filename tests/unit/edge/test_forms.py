"""Bounded form reading: only url-encoded bodies within their size and field limits are read, the first
value of a repeated field wins, and a body that does not decode is no form at all."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from fastapi import FastAPI, Request

from foldgate.edge.forms import read_form

FORM = "application/x-www-form-urlencoded"


async def posted(body: bytes, content_type: str = FORM, **limits: Any) -> Any:
    app = FastAPI()

    @app.post("/")
    async def echo(request: Request) -> Any:
        return {"form": await read_form(request, **{"max_bytes": 64, "max_fields": 3, **limits})}

    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://t") as client:
        answer = await client.post("/", content=body, headers={"content-type": content_type})
    return answer.json()["form"]


async def test_the_first_value_of_each_field_is_read() -> None:
    assert await posted(b"a=1&b=&a=2") == {"a": "1", "b": ""}
    assert await posted(b"a=1", content_type=FORM + "; charset=utf-8") == {"a": "1"}


@pytest.mark.parametrize(
    ("body", "content_type", "limits"),
    [
        (b'{"a": 1}', "application/json", {}),  # not a form
        (b"a=" + b"x" * 80, FORM, {}),  # over max_bytes
        (b"a=1&b=2&c=3&d=4", FORM, {}),  # over max_fields
        (b"a=\xff", FORM, {}),  # not utf-8
        (b"a=%C3%A9\xc3\xa9", FORM, {"encoding": "ascii"}),  # not ascii
    ],
)
async def test_anything_else_is_no_form(body: bytes, content_type: str, limits: dict[str, Any]) -> None:
    assert await posted(body, content_type, **limits) is None
