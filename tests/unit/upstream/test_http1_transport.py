"""The pooled sessions' HTTP/1.1 transport (foldgate.upstream.http1_transport) against a raw loopback
server that answers scripted bytes: framing, keep-alive and reuse, hostile answers, request checks,
pinning to the guard's addresses, timeouts and TLS."""

from __future__ import annotations

import asyncio
import datetime
import gzip
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from foldgate.upstream import http1_transport, net_guard
from foldgate.upstream.http1_transport import MAX_HEADER_BYTES
from foldgate.upstream.http1_transport import http1_transport as make_transport

Script = Callable[[bytes], bytes | list[bytes] | None]


class RawServer:
    """A loopback HTTP/1.1 server: each request (head + Content-Length body) gets ``script``'s bytes
    (a list: written one part at a time, ``[]``: nothing, ever; None: the connection is closed without
    an answer). It closes after an answer without framing or with ``Connection: close``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self, ssl_context: ssl.SSLContext | None = None) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=ssl_context)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                request = head + (await reader.readexactly(length) if length else b"")
                self.requests.append(request)
                answer = self.script(request)
                if answer is None:
                    break
                parts = [answer] if isinstance(answer, bytes) else answer
                if not parts:  # stall: answer nothing until the client gives up
                    await reader.read()
                    break
                for part in parts:
                    writer.write(part)
                    await writer.drain()
                    await asyncio.sleep(0.01)
                whole = b"".join(parts).lower()
                unframed = b"content-length" not in whole and b"chunked" not in whole
                if unframed or b"connection: close" in whole:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def url(self, path: str = "/mcp", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Any]]:
    servers: list[RawServer] = []

    async def start(script: Script, ssl_context: ssl.SSLContext | None = None) -> RawServer:
        server = await RawServer(script).start(ssl_context)
        servers.append(server)
        return server

    yield start
    for server in servers:
        await server.stop()


def client(**kwargs: Any) -> httpx2.AsyncClient:
    kwargs.setdefault("allow_private", True)
    return httpx2.AsyncClient(transport=make_transport(**kwargs), timeout=5)


def ok(body: bytes = b'{"ok":true}', extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body), extra, body,
    )  # fmt: skip


def chunked(*parts: bytes) -> list[bytes]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    return [head, *(b"%x\r\n%s\r\n" % (len(p), p) for p in parts), b"0\r\n\r\n"]


async def test_a_warm_connection_is_reused_and_each_request_goes_out_whole(serve: Any) -> None:
    server = await serve(lambda _: ok())
    async with client() as http:
        for _ in range(3):
            response = await http.post(server.url(), content=b'{"a":1}', headers={"x-k": "v"})
            assert response.status_code == 200
            assert response.json() == {"ok": True}
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /mcp HTTP/1.1\r\n")
    assert b"\r\nx-k: v\r\n" in first
    assert b"\r\nContent-Length: 7\r\n" in first
    assert first.endswith(b'\r\n\r\n{"a":1}')


async def test_a_chunked_answer_streams_and_an_early_close_keeps_the_connection(serve: Any) -> None:
    server = await serve(lambda _: chunked(b'data: {"id":1}\n\n', b": end\n\n"))
    async with client() as http:
        for _ in range(2):
            async with http.stream("POST", server.url(), content=b"{}") as response:
                async for chunk in response.aiter_bytes():
                    assert chunk.startswith(b"data:")
                    break  # the answer is in: closing reads the stream's end, briefly
    assert server.connections == 1


async def test_a_body_delimited_by_the_connections_end_is_read_whole_and_not_reused(serve: Any) -> None:
    calls = 0

    def close_after(request: bytes) -> bytes | list[bytes] | None:
        nonlocal calls
        calls += 1
        return ok() if calls > 1 else [b"HTTP/1.0 200 OK\r\n\r\nhello ", b"world"]

    server = await serve(close_after)
    async with client() as http:
        response = await http.post(server.url(), content=b"{}")
        assert response.content == b"hello world"
        response = await http.post(server.url(), content=b"{}")  # needs a new connection
    assert server.connections == 2


async def test_connection_close_is_honoured(serve: Any) -> None:
    server = await serve(lambda _: ok(extra=b"Connection: close\r\n"))
    async with client() as http:
        await http.post(server.url(), content=b"{}")
        await http.post(server.url(), content=b"{}")
    assert server.connections == 2


async def test_interim_answers_are_skipped(serve: Any) -> None:
    interim = [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"]
    server = await serve(lambda _: [*interim, ok()])
    async with client() as http:
        response = await http.post(server.url(), content=b"{}")
        assert response.status_code == 200
        assert "link" not in response.headers
        assert (await http.post(server.url(), content=b"{}")).status_code == 200
    assert server.connections == 1


@pytest.mark.parametrize(
    ("answer", "match"),
    [
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (MAX_HEADER_BYTES + 1) + b"\r\n\r\n", "headers exceed"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab", "not valid HTTP"),
        (b"SPDY/9 what\r\n\r\n", "not valid HTTP"),
        (b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", "not valid HTTP"),
        (b"HTTP/1.1 101 Switching\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n", "switched"),
    ],
)
async def test_a_hostile_answer_is_a_protocol_error_and_its_connection_is_dropped(
    serve: Any, answer: bytes, match: str
) -> None:
    server = await serve(lambda _: answer)
    async with client() as http:
        with pytest.raises(httpx2.RemoteProtocolError, match=match):
            await http.post(server.url(), content=b"{}")
        server.script = lambda _: ok()
        assert (await http.post(server.url(), content=b"{}")).status_code == 200
    assert server.connections == 2


@pytest.mark.parametrize("apart", [False, True], ids=["same read", "while idle"])
async def test_bytes_after_an_answer_spoil_the_connection_not_the_next_answer(
    serve: Any, apart: bool
) -> None:
    forged = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge"
    server = await serve(lambda _: [ok(), forged] if apart else ok() + forged)
    async with client() as http:
        assert (await http.post(server.url(), content=b"{}")).json() == {"ok": True}
        await asyncio.sleep(0.05)
        server.script = lambda _: ok(b'{"second":true}')
        assert (await http.post(server.url(), content=b"{}")).json() == {"second": True}
    assert server.connections == 2


async def test_an_upstream_that_hangs_up_without_answering_is_a_clear_error(serve: Any) -> None:
    server = await serve(lambda _: None)
    async with client() as http:
        with pytest.raises(httpx2.RemoteProtocolError, match="disconnected without sending a response"):
            await http.post(server.url(), content=b"{}")


async def test_an_answer_cut_mid_body_is_an_error(serve: Any) -> None:
    calls = 0

    def cut(_: bytes) -> list[bytes] | None:
        nonlocal calls
        calls += 1
        return [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nConnection: close\r\n\r\nshort"]

    server = await serve(cut)
    async with client() as http, http.stream("POST", server.url(), content=b"{}") as response:
        with pytest.raises(httpx2.RemoteProtocolError, match="before its answer ended"):
            await response.aread()


@pytest.mark.parametrize(
    "headers",
    [{"x-evil": "a\r\nInjected: 1"}, {"x-evil": "a\nb"}, {"x-evil": "a\x00b"}, {"bad name": "v"}],
)
async def test_a_header_that_could_split_the_request_is_refused_before_anything_is_sent(
    serve: Any, headers: dict[str, str]
) -> None:
    server = await serve(lambda _: ok())
    async with client() as http:
        with pytest.raises(httpx2.LocalProtocolError):
            await http.post(server.url(), content=b"{}", headers=headers)
    assert server.requests == []


async def test_a_chunked_request_body_is_framed(serve: Any) -> None:
    server = await serve(lambda _: ok())

    async def parts() -> AsyncIterator[bytes]:
        yield b'{"a":'
        yield b"1}"

    async with client() as http:
        await http.post(server.url(), content=parts())
    # The raw server frames by Content-Length only: the body must have gone as one final chunk.
    assert b"Transfer-Encoding: chunked" in server.requests[0]


@pytest.mark.parametrize(
    "answer", [[], [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"]], ids=["no head", "no body"]
)
async def test_a_stalled_answer_is_a_read_timeout(serve: Any, answer: list[bytes]) -> None:
    server = await serve(lambda _: answer)
    async with httpx2.AsyncClient(transport=make_transport(allow_private=True), timeout=0.3) as http:
        with pytest.raises(httpx2.ReadTimeout):
            await http.post(server.url(), content=b"{}")


async def test_an_idle_connection_past_its_keep_alive_is_not_reused(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await serve(lambda _: ok())
    monkeypatch.setattr(http1_transport, "KEEPALIVE_SECONDS", 0.0)
    async with client() as http:
        await http.post(server.url(), content=b"{}")
        await http.post(server.url(), content=b"{}")
    assert server.connections == 2


async def test_a_large_body_arrives_whole_through_flow_control(serve: Any) -> None:
    body = bytes(range(256)) * 8192  # 2 MiB, far past the reader's high-water mark
    server = await serve(lambda _: ok(body))
    async with client() as http, http.stream("POST", server.url(), content=b"{}") as response:
        got = bytearray()
        async for chunk in response.aiter_raw():
            got += chunk
            await asyncio.sleep(0)  # a slow reader: reading pauses and resumes
        assert bytes(got) == body


async def test_connections_dial_only_the_guards_addresses(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = await serve(lambda _: ok())
    answers = {"upstream.example.test": "127.0.0.1", "meta.evil.test": "169.254.169.254"}
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answers[host], port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    net_guard.clear_cache()
    try:
        async with client() as http:
            response = await http.post(server.url(host="upstream.example.test"), content=b"{}")
            assert response.status_code == 200
            # The name went to the Host header, never to the socket layer.
            assert b"\r\nHost: upstream.example.test:%d\r\n" % server.port in server.requests[0]
            with pytest.raises(httpx2.ConnectError, match="cloud metadata"):
                await http.post(f"http://meta.evil.test:{server.port}/mcp", content=b"{}")
        async with client(allow_private=False) as http:
            with pytest.raises(httpx2.ConnectError, match="private upstreams are not allowed"):
                await http.post(server.url(), content=b"{}")
    finally:
        net_guard.clear_cache()
    assert server.connections == 1


async def test_a_refused_connection_names_no_address() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        async with client() as http:
            with pytest.raises(httpx2.ConnectError) as info:
                await http.post(f"http://127.0.0.1:{port}/mcp", content=b"{}")
    assert "127.0.0.1" not in str(info.value)
    assert "ECONNREFUSED" in str(info.value)


def _certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    # The test's own throwaway CA-less certificate for ``name`` (cryptography ships with pyjwt[crypto]).
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    cert_path, key_path = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


async def test_tls_verifies_the_urls_host_name_on_the_pinned_address(
    serve: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = _certificate(tmp_path, "upstream.example.test")
    served = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    served.load_cert_chain(cert, key)
    server = await serve(lambda _: ok(), served)
    real = socket.getaddrinfo

    def resolve(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if str(host).endswith(".example.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    net_guard.clear_cache()
    trusting = ssl.create_default_context(cafile=str(cert))
    try:
        async with client(ssl_context=trusting) as http:
            url = server.url(host="upstream.example.test", scheme="https")
            assert (await http.post(url, content=b"{}")).status_code == 200
            with pytest.raises(httpx2.ConnectError, match="TLS"):
                await http.post(server.url(host="other.example.test", scheme="https"), content=b"{}")
        async with client() as http:  # the default context does not trust the test's certificate
            with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.post(server.url(host="upstream.example.test", scheme="https"), content=b"{}")
    finally:
        net_guard.clear_cache()


async def test_a_closed_transport_refuses_and_closes_its_connections(serve: Any) -> None:
    server = await serve(lambda _: ok())
    transport = make_transport(allow_private=True)
    async with httpx2.AsyncClient(transport=transport) as http:
        await http.post(server.url(), content=b"{}")
    with pytest.raises(httpx2.ConnectError, match="closed"):
        await transport.handle_async_request(httpx2.Request("POST", server.url(), content=b"{}"))


async def test_an_idle_connection_the_upstream_closed_unseen_by_the_loop_is_not_reused() -> None:
    # A thawed Lambda instance runs its request before the loop polls the idle socket its upstream
    # hung up on; the connection must not be handed a request (it would fail, sent to no one).
    answer = ok()
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    served: list[socket.socket] = []

    def serve_one() -> None:
        conn, _ = listener.accept()
        served.append(conn)
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"{}"):
            data += conn.recv(65536)
        conn.sendall(answer)

    thread = threading.Thread(target=serve_one, daemon=True)
    thread.start()
    try:
        async with client() as http:
            assert (await http.post(f"http://127.0.0.1:{port}/mcp", content=b"{}")).status_code == 200
            thread.join(5)
            served[0].close()  # FIN, while this test's loop does not run
            time.sleep(0.1)
            accept = threading.Thread(target=serve_one, daemon=True)
            accept.start()
            response = await http.post(f"http://127.0.0.1:{port}/mcp", content=b"{}")
            assert response.status_code == 200  # on a new connection, not the dead one
            accept.join(5)
            assert len(served) == 2
    finally:
        for conn in served:
            conn.close()
        listener.close()


async def test_a_request_whose_task_is_being_cancelled_is_never_sent(serve: Any) -> None:
    server = await serve(lambda _: ok())
    async with client() as http:
        await http.post(server.url(), content=b"{}")  # a warm connection: nothing else would suspend

        async def cancelled_then_sent() -> None:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # as a deadline or a departed client does, before the request is written
            await http.post(server.url(), content=b"{}")

        with pytest.raises(asyncio.CancelledError):
            await asyncio.create_task(cancelled_then_sent())
        await asyncio.sleep(0.05)
    assert len(server.requests) == 1


async def test_a_compressed_answer_is_decoded_above_the_transport(serve: Any) -> None:
    body = gzip.compress(b'{"ok":"compressed"}')
    server = await serve(lambda _: ok(body, extra=b"Content-Encoding: gzip\r\n"))
    async with client() as http:
        response = await http.post(server.url(), content=b"{}")
    assert response.json() == {"ok": "compressed"}


async def test_an_answer_left_unread_past_the_high_water_mark_does_not_stall_the_next(serve: Any) -> None:
    answers = iter([ok(b"x" * (300 * 1024)), ok()])
    server = await serve(lambda _: next(answers))
    async with client() as http:
        async with http.stream("POST", server.url(), content=b"{}"):
            await asyncio.sleep(0.2)  # the whole answer arrives, past the high-water mark: reading pauses
        response = await asyncio.wait_for(http.post(server.url(), content=b"{}"), 5)
        assert response.json() == {"ok": True}
