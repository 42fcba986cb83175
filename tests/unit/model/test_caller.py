"""The upstream caller: the inbound token a request presented is bound to that person's subject only,
never to the shared subject (the indexer, a job), and never shows in a repr or an equality."""

from __future__ import annotations

import asyncio

from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller, calling_as, current_caller, presenting


def test_the_inbound_token_goes_with_a_persons_subject_only() -> None:
    async def request() -> tuple[UpstreamCaller | None, UpstreamCaller | None]:
        presenting("canary-inbound-token")
        with calling_as("acme", "oauth-sub-1"):
            person = current_caller()
        with calling_as("acme"):
            shared = current_caller()
        return person, shared

    person, shared = asyncio.run(request())
    assert person is not None
    assert person.inbound_token == "canary-inbound-token"
    assert shared is not None
    assert (shared.subject, shared.inbound_token) == (SHARED_SUBJECT, None)
    assert "canary" not in repr(person)
    assert person == UpstreamCaller("acme", "oauth-sub-1")  # a credential is not identity


def test_each_request_sees_only_its_own_token() -> None:
    async def request(token: str | None) -> str | None:
        presenting(token)
        await asyncio.sleep(0)  # interleave with the other request
        with calling_as("acme", "someone"):
            caller = current_caller()
        return caller.inbound_token if caller is not None else "no caller"

    async def both() -> list[str | None]:
        return list(await asyncio.gather(request("token-a"), request(None), request("token-b")))

    assert asyncio.run(both()) == ["token-a", None, "token-b"]
