"""diffusion_infill.engine.remote.client against a scripted vLLM serving DiffusionGemma on loopback
(openai_servers.VllmStandIn): a released vLLM (chat, one whole canvas, temperature refused, thinking
on by default) and the build of vLLM pull request #57250 (the clamped canvas). Issue 50, item 1."""

from __future__ import annotations

import pytest
from openai_servers import VllmStandIn

from diffusion_infill.engine.remote.client import RemoteEngine, RemoteError, forget_servers
from diffusion_infill.engine.remote.readback import canvas_insertion
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings

PATIENT = 60.0


# what engine_for opened in the running test: closed after it, whether or not it passed
_opened: list[VllmStandIn | RemoteEngine] = []


@pytest.fixture(autouse=True)
def _fresh_probes():
    forget_servers()  # each test's server is new; probes are kept per URL for the process
    yield
    while _opened:
        _opened.pop().close()  # engines first (opened last), then their servers
    forget_servers()


def engine_for(server: VllmStandIn, mode: str = "multi-line", **overrides) -> RemoteEngine:
    values = {"timeout": PATIENT, "invoked_timeout": PATIENT, **overrides}
    engine = RemoteEngine(RemoteSettings(server.url, "diffusiongemma", **values), EngineSettings(mode=mode))
    if server not in _opened:
        _opened.append(server)
    _opened.append(engine)
    return engine


def final(engine: RemoteEngine, prefix: str, suffix: str) -> str:
    return list(engine.complete(InfillRequest(prefix, suffix, "python", invoked=True)))[-1].text


def test_the_probe_tells_each_build_without_generating_a_canvas():
    for pull_request, expected in ((True, "diffusion"), (False, "chat")):
        server = VllmStandIn(lambda prompt, seed: "", pull_request=pull_request)
        engine = engine_for(server)
        assert engine.probe() == expected
        assert server.generated == 0  # both probes were refused before any canvas


def test_the_probe_is_kept_per_server():
    server = VllmStandIn(lambda prompt, seed: "x", pull_request=True)
    first = engine_for(server)
    first.probe()
    asked = len(server.bodies)
    second = engine_for(server)  # e.g. the language server's engine renewed, or `fix` after `complete`
    assert second.probe() == "diffusion" and len(server.bodies) == asked


def test_a_multi_line_canvas_at_the_end_of_a_file_keeps_every_line():
    server = VllmStandIn(lambda prompt, seed: "    x = 1\n    y = 2", pull_request=True)
    engine = engine_for(server)
    assert final(engine, "def f():\n", "\n") == "    x = 1\n    y = 2"  # the strip lost "    y = 2"


def test_an_empty_insertion_does_not_repeat_the_text_after_the_cursor():
    server = VllmStandIn(lambda prompt, seed: "", pull_request=True)
    engine = engine_for(server)
    assert final(engine, "def f(c):\n    c += 1", "\n    return c\n") == ""


def test_a_head_not_read_back_verbatim_is_still_cut():
    """The pull request writes its argmax at pinned slots: the head may come back changed."""
    server = VllmStandIn(
        lambda prompt, seed: "total += 1", pull_request=True, pinned_reads_as=lambda head: head.replace("ret", "rat")
    )
    engine = engine_for(server, mode="single-line")
    assert final(engine, "    ", ")\n    return total\n") == "total += 1"


def test_canvas_readback_rules():
    assert canvas_insertion("    x = 1\n    y = 2\n", "\n", whole=True) == "    x = 1\n    y = 2"
    assert canvas_insertion("\n    return c", "\n    return c", whole=True) == ""
    assert canvas_insertion("a = 1)\n    ratorn", ")\n    return", whole=True) == "a = 1"
    assert canvas_insertion("a = 1", ")\n    return", whole=False) == "a = 1"  # ended before the head


def test_every_chat_request_turns_thinking_off():
    server = VllmStandIn(lambda prompt, seed: "1", pull_request=False)
    engine = engine_for(server, mode="single-line")
    assert final(engine, "x = ", "\n") == "1"  # thinking on, the answer would be reasoning_content only
    chats = [body for body in server.bodies if "messages" in body]
    assert chats and all(body["chat_template_kwargs"] == {"enable_thinking": False} for body in chats)


def test_a_released_vllm_answers_chat_with_one_whole_canvas_and_a_leading_newline_kept():
    server = VllmStandIn(lambda prompt, seed: "\n    return x", pull_request=False)
    engine = engine_for(server)
    assert final(engine, "def f(x):", "\n") == "\n    return x"
    assert server.generated == 1  # the completion's canvas, nothing for the probe


def test_fim_is_accepted_by_a_diffusion_server():
    """vLLM refuses temperature=0.0 for a diffusion model; the fim format sends none there."""
    server = VllmStandIn(lambda prompt, seed: "1", pull_request=False)
    engine = engine_for(server, mode="single-line", prompt_format="fim")
    assert final(engine, "x = ", "\n") == "1"
    assert final(engine, "y = ", "\n") == "1"
    completions = [body for body in server.bodies if "prompt" in body and "model" in body and body.get("stream")]
    assert [("temperature" in body) for body in completions] == [True, False, False]  # refused once, then known


def test_a_refused_request_is_one_error_naming_the_url():
    server = VllmStandIn(lambda prompt, seed: "", pull_request=True, served_canvas=256)
    engine = engine_for(server, prompt_format="diffusion", max_tokens=0)  # a canvas shorter than asked: refused
    with pytest.raises(RemoteError, match=rf"^{server.url} answered 400"):
        list(engine.complete(InfillRequest("x = ", "")))
