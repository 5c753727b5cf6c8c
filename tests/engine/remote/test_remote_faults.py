"""diffusion_infill.engine.remote.client against servers that misbehave (openai_servers.FaultyServer,
real listeners on loopback): slow, endless, huge, redirecting, garbage, wrong-shaped, an HTML 500.
Issue 52, items 1 and 2."""

from __future__ import annotations

import socket
import time

import pytest
from openai_servers import FaultyServer, SilentServer, body, events

from diffusion_infill.engine.remote.client import RemoteEngine, RemoteError, RemoteTimeout, forget_servers
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.requests import InfillRequest

MIB = 1 << 20


@pytest.fixture(autouse=True)
def _fresh_probes():
    forget_servers()
    yield
    forget_servers()


def engine_for(url: str, **overrides) -> RemoteEngine:
    values = {"prompt_format": "fim", "timeout": 30.0, "invoked_timeout": 30.0, **overrides}
    return RemoteEngine(RemoteSettings(url, "m", **values))


def test_one_deadline_covers_the_probe_and_the_stream():
    """A server that takes 1.5 s a request: the probe's requests and the stream share 2 s."""
    slow = FaultyServer(lambda handler: (time.sleep(1.5), events(handler, ["1"])))
    engine = engine_for(slow.url, prompt_format="auto", invoked_timeout=2.0)
    started = time.monotonic()
    with pytest.raises(RemoteTimeout, match="did not answer within 2 s"):
        list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))
    assert time.monotonic() - started < 2.0 + 0.5  # before: the probe got 2 s, then the stream 2 s more
    engine.close()
    slow.close()


def test_an_endless_huge_stream_is_cut_at_the_bound_and_closed():
    endless = FaultyServer(lambda handler: events(handler, ("x" * 1000 for _ in range(50 * 1024))))
    engine = engine_for(endless.url)
    [*_, final] = engine.complete(InfillRequest("s = '", "'\n", "python", invoked=True))
    assert 0 < len(final.text) <= 32 * 64  # max_tokens * MAX_CHARS_PER_TOKEN, not 50 MiB
    engine.close()
    endless.close()


def test_a_reply_past_the_byte_bound_is_malformed():
    line = FaultyServer(lambda handler: body(handler, 200, b"data: " + b"x" * (2 * MIB), "text/event-stream"))
    engine = engine_for(line.url)
    with pytest.raises(RemoteError, match=r"sent a malformed reply .*past 1,048,576 bytes"):
        list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))
    engine.close()
    line.close()


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(lambda handler: body(handler, 200, bytes(range(256)) * 8, "text/event-stream"), id="garbage"),
        pytest.param(lambda handler: body(handler, 200, b'{"unexpected": true}'), id="wrong-shape"),
        pytest.param(lambda handler: body(handler, 200, b'data: {"choices": 3}\n\n', "text/event-stream"), id="chunk"),
    ],
)
def test_a_malformed_reply_is_one_error_naming_the_url(reply):
    server = FaultyServer(reply)
    engine = engine_for(server.url)
    with pytest.raises(RemoteError, match=rf"^{server.url} sent a malformed reply"):
        list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))
    engine.close()
    server.close()


def test_a_500_page_is_told_shortened_and_without_markup():
    page = b"<html><body><h1>Internal Server Error</h1><p>" + b"trace line " * 200 + b"</p></body></html>"
    server = FaultyServer(lambda handler: body(handler, 500, page, "text/html"))
    engine = engine_for(server.url)
    with pytest.raises(RemoteError) as raised:
        list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))
    message = str(raised.value)
    assert message.startswith(f"{server.url} answered 500") and "Internal Server Error" in message
    assert "<" not in message and len(message) < 300
    engine.close()
    server.close()


def test_a_redirect_to_another_port_sends_nothing_there():
    elsewhere = SilentServer()
    redirecting = FaultyServer(lambda handler: body(handler, 307, b"", Location=f"{elsewhere.url}/completions"))
    engine = engine_for(redirecting.url)
    with pytest.raises(RemoteError, match=rf"redirected to {elsewhere.url}/completions: not followed"):
        list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))
    with pytest.raises(Exception):  # noqa: B017 (queue.Empty: nothing arrived)
        elsewhere.next_request(0.5)
    engine.close()
    redirecting.close()
    elsewhere.close()


def test_a_redirect_within_the_server_is_followed():
    def reply(handler) -> None:
        if handler.path.endswith("/moved"):
            events(handler, ["1"])
        else:
            body(handler, 307, b"", Location=handler.path + "/moved")

    server = FaultyServer(reply)
    engine = engine_for(server.url)
    assert list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))[-1].text == "1"
    engine.close()
    server.close()


def test_nothing_listening_for_an_invoked_request_is_still_an_error_at_once():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    engine = engine_for(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(RemoteError, match="cannot reach"):
        list(engine.complete(InfillRequest("x = ", "\n", invoked=True)))
    engine.close()
