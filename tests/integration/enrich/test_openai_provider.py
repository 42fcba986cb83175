"""The openai provider against a real HTTP server on loopback speaking OpenAI's chat completions wire
format (standing in for vLLM, Ollama or llama.cpp's server): the request it sends, retries after a
throttle, and every failure (down, refusing, slow, oversized, not JSON) as EnrichmentError."""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from foldgate.enrich.base import EnrichmentError
from foldgate.enrich.providers.openai import MAX_RESPONSE_BYTES, OpenAIProvider
from tests.enrich_data import catalog_requests

REQUEST = catalog_requests()[0]
ANSWER = (
    "Hint: Use to open a new GitHub issue; to change one use update_issue.\n"
    "Queries:\n- report a bug on my repo\n- open a github issue\n- file a feature request"
)


def completion(text: str = ANSWER) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "tiny",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366},
    }


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    hold: threading.Event | None = None  # answer only once this is set (a server that hangs)


@dataclass
class FakeOpenAI:
    """Answers POST /v1/chat/completions with the queued replies in turn; keeps each request."""

    replies: list[Reply] = field(default_factory=list)
    seen: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[tuple[FakeOpenAI, str]]:
    fake = FakeOpenAI()
    holds: list[threading.Event] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            fake.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            reply = fake.replies.pop(0) if fake.replies else Reply(200, json.dumps(completion()).encode())
            if reply.hold is not None:
                holds.append(reply.hold)
                reply.hold.wait(30)
            self.send_response(reply.status)
            for key, value in {"content-type": "application/json", **reply.headers}.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up (the timeout test)
                self.wfile.write(reply.body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        for hold in holds:
            hold.set()
        httpd.shutdown()
        httpd.server_close()


def _provider(base_url: str, **kwargs: Any) -> OpenAIProvider:
    options: dict[str, Any] = {"model": "tiny", "retries": 2, "backoff_s": 0.0, "timeout_s": 5.0}
    options.update(kwargs)
    return OpenAIProvider(base_url=base_url, **options)


async def test_a_chat_completion_is_asked_and_its_answer_and_tokens_read(
    server: tuple[FakeOpenAI, str],
) -> None:
    fake, url = server
    provider = _provider(url, api_key="sk-local", max_tokens=99)
    try:
        raw = await provider.enrich(REQUEST)
    finally:
        await provider.aclose()
    assert raw.hint == "Use to open a new GitHub issue; to change one use update_issue."
    assert raw.queries == ("report a bug on my repo", "open a github issue", "file a feature request")
    assert (raw.tokens_in, raw.tokens_out) == (321, 45)
    path, headers, body = fake.seen[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-local"
    assert body["model"] == "tiny"
    assert body["max_tokens"] == 99
    assert body["temperature"] == 0.0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert '"create_issue" on server "gitlab"' in body["messages"][1]["content"]
    usage = provider.usage
    assert (usage.calls, usage.failures, usage.tokens_in, usage.tokens_out) == (1, 0, 321, 45)


async def test_a_throttled_request_is_retried_then_answered(server: tuple[FakeOpenAI, str]) -> None:
    fake, url = server
    fake.replies += [Reply(429, b'{"error": "slow down"}', {"retry-after": "0"}), Reply(503, b"busy")]
    provider = _provider(url)
    raw = await provider.enrich(REQUEST)
    await provider.aclose()
    assert raw.queries[0] == "report a bug on my repo"
    assert len(fake.seen) == 3
    assert (provider.usage.calls, provider.usage.failures) == (1, 0)


async def test_throttled_past_the_retries_is_an_enrichment_error(server: tuple[FakeOpenAI, str]) -> None:
    fake, url = server
    fake.replies += [Reply(429, b"{}") for _ in range(3)]
    provider = _provider(url, retries=2)
    with pytest.raises(EnrichmentError, match="HTTP 429"):
        await provider.enrich(REQUEST)
    await provider.aclose()
    assert len(fake.seen) == 3
    assert provider.usage.failures == 1


async def test_a_refusal_is_not_retried(server: tuple[FakeOpenAI, str]) -> None:
    fake, url = server
    fake.replies.append(Reply(401, b'{"error": "bad key"}'))
    provider = _provider(url)
    with pytest.raises(EnrichmentError, match="HTTP 401 from the model server"):
        await provider.enrich(REQUEST)
    await provider.aclose()
    assert len(fake.seen) == 1


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (Reply(200, b"<html>oops</html>"), "other than JSON"),
        (Reply(200, b'{"choices": []}'), "not a chat completion"),
        (Reply(200, json.dumps(completion("Sure! Here you go.")).encode()), "unparseable answer"),
        (Reply(200, b"x" * (MAX_RESPONSE_BYTES + 10)), "over 1048576 bytes"),
    ],
)
async def test_an_answer_that_is_not_a_usable_completion_is_an_enrichment_error(
    server: tuple[FakeOpenAI, str], reply: Reply, message: str
) -> None:
    fake, url = server
    fake.replies.append(reply)
    provider = _provider(url, retries=0)
    with pytest.raises(EnrichmentError, match=message):
        await provider.enrich(REQUEST)
    await provider.aclose()


async def test_a_server_that_hangs_hits_the_deadline(server: tuple[FakeOpenAI, str]) -> None:
    fake, url = server
    fake.replies.append(Reply(200, json.dumps(completion()).encode(), hold=threading.Event()))
    provider = _provider(url, retries=0, timeout_s=0.3)
    with pytest.raises(EnrichmentError, match="TimeoutError"):
        await provider.enrich(REQUEST)
    await provider.aclose()


async def test_a_server_that_is_down_is_an_enrichment_error() -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = _provider(f"http://127.0.0.1:{port}/v1", retries=1)
    with pytest.raises(EnrichmentError, match="ConnectError"):
        await provider.enrich(REQUEST)
    await provider.aclose()
    assert (provider.usage.calls, provider.usage.failures) == (1, 1)
