"""The holder of connect links the call path signed during one request (serve/consent.py).

Pins: links are collected only inside ``collecting`` (outside it noting is a no-op, so nothing piles
up across requests), and a link noted from a task started inside the block still lands in the holder.
"""

from __future__ import annotations

import asyncio

from foldgate.serve.consent import ConsentLink, collecting, note_consent_link


async def test_links_are_collected_inside_the_block_only_even_from_tasks() -> None:
    note_consent_link("crm", "https://gw.example/oauth/connect?a")  # outside: dropped
    with collecting() as links:
        note_consent_link("crm", "https://gw.example/oauth/connect?b")
        await asyncio.gather(asyncio.create_task(_note("docs", "https://gw.example/oauth/connect?c")))
    assert links == [
        ConsentLink("crm", "https://gw.example/oauth/connect?b"),
        ConsentLink("docs", "https://gw.example/oauth/connect?c"),
    ]
    with collecting() as fresh:
        pass
    assert fresh == []


async def _note(server: str, url: str) -> None:
    note_consent_link(server, url)
