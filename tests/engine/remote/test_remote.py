"""diffusion_infill.engine.remote.client against real servers: `transformers serve` serving the autoregressive
baseline (plain completions) and the same weights with a chat template (chat completions),
a port nothing listens on, and a peer that takes the request and never answers."""

from __future__ import annotations

import http.server
import logging
import random
import re
import threading

import pytest
from openai_servers import SilentServer, free_port
from transformers import AutoModelForCausalLM, AutoTokenizer

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.baseline.autoregressive import FIM_TOKENS
from diffusion_infill.engine.remote.client import (
    RemoteEngine,
    RemoteError,
    RemoteRepairer,
    clamped_canvas,
)
from diffusion_infill.engine.remote.settings import Credentials, RemoteSettings, api_key
from diffusion_infill.engine.repair.fixes import Fixer, Surroundings
from diffusion_infill.engine.repair.spans import Span
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings

PREFIX = "import os\n\n\ndef main():\n    path = os.path.abspath("
REQUEST = InfillRequest(PREFIX, "\n", "python", invoked=True)
PATIENT = 120.0  # seconds: a busy 2-core machine must not turn a test into a timeout


def engine_for(url: str, model: str, **overrides) -> RemoteEngine:
    values = {"timeout": PATIENT, "invoked_timeout": PATIENT, **overrides}
    return RemoteEngine(RemoteSettings(url, model, **values))


@pytest.fixture(scope="module")
def fim_engine(openai_server):
    engine = engine_for(openai_server.url, openai_server.fim_model)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def chat_engine(openai_server):
    engine = engine_for(openai_server.url, openai_server.chat_model)
    yield engine
    engine.close()


def test_the_probe_picks_plain_completions_for_a_model_without_chat_template(openai_server, caplog):
    engine = engine_for(openai_server.url, openai_server.fim_model)
    with caplog.at_level(logging.INFO, logger="diffusion_infill.engine.remote.client"):
        assert engine.probe() == "fim"
    assert f"{openai_server.fim_model} at {openai_server.url}: using the fim prompt format" in caplog.text
    engine.close()


def test_the_probe_picks_chat_when_the_server_has_a_chat_template_and_no_diffusion_arguments(chat_engine):
    assert chat_engine.probe() == "chat"


def test_fim_drafts_stream_then_one_closure_valid_final(fim_engine):
    drafts = list(fim_engine.complete(REQUEST))
    assert [d.final for d in drafts].count(True) == 1 and drafts[-1].final and drafts[-1].valid
    assert len(drafts) > 2  # streamed: one draft per chunk the server sent
    assert [d.step for d in drafts[:-1]] == list(range(1, len(drafts)))
    texts = [d.text for d in drafts[:-1]]
    assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:], strict=False))
    assert drafts[-1].text and syntax_check.check(PREFIX, drafts[-1].text, "\n", "python").valid


def test_the_fim_answer_is_the_served_models_greedy_middle(openai_server, fim_engine):
    """What the server answers is the baseline's own greedy continuation of the same prompt."""
    tokenizer = AutoTokenizer.from_pretrained(openai_server.fim_model)
    model = AutoModelForCausalLM.from_pretrained(openai_server.fim_model, use_kernels=False).eval()
    before, after, middle = FIM_TOKENS
    prompt = tokenizer(f"{before}{PREFIX}{after}\n{middle}", return_tensors="pt")
    output = model.generate(**prompt, max_new_tokens=32, do_sample=False)
    expected = tokenizer.decode(output[0, prompt["input_ids"].shape[1] :], skip_special_tokens=True)
    final = list(fim_engine.complete(REQUEST))[-1]
    assert expected.startswith(final.text)


def test_chat_answers_stream_and_one_line_is_cut_at_its_end(chat_engine):
    drafts = list(chat_engine.complete(InfillRequest("x = ", "\n", "python", invoked=True)))
    assert drafts[-1].final and drafts[-1].valid
    assert all("\n" not in d.text for d in drafts)
    # the same answer unshaped streams (the one-line answer may end at once: a leading line break is kept)
    engine = RemoteEngine(chat_engine.remote, EngineSettings(mode="multi-line"))
    assert len(list(engine.complete(InfillRequest("x = ", "\n", "python", invoked=True)))) > 2
    engine.close()


def test_repairs_go_through_the_server(chat_engine):
    """Code actions use the same engine: regenerate asks the server for the selection."""
    result = Fixer(RemoteRepairer(chat_engine)).regenerate("x = 1\n", Surroundings("y = 1\n", "print(x)\n", "python"))
    assert result.tried == 1  # one candidate, from the server (a local repairer samples two)


def test_filling_a_span_keeps_the_text_around_it(fim_engine):
    text = "values = [1, 2]\ntotal = sum(values)\n"
    start = text.index("sum")
    [filled] = RemoteRepairer(fim_engine).fill("", text, [Span(start, start + 3)], "")
    assert filled.startswith(text[:start]) and filled.endswith("(values)\n")


def test_nothing_listening_raises_one_error_that_names_the_url():
    url = f"http://127.0.0.1:{free_port()}/v1"
    engine = engine_for(url, "any", timeout=0.8)
    with pytest.raises(RemoteError, match=url.replace(".", r"\.")):
        list(engine.complete(InfillRequest("x = ", "\n")))
    engine.close()


def test_an_error_status_names_the_url_and_the_status(openai_server):
    engine = engine_for(openai_server.url, openai_server.fim_model, prompt_format="chat")  # no chat template
    with pytest.raises(RemoteError) as raised:
        list(engine.complete(REQUEST))
    # transformers 5.24 answers 500 here and 5.25 answers 400: the status is the server's to choose
    assert re.search(rf"^{re.escape(openai_server.url)} answered [45]\d\d", str(raised.value))
    engine.close()


def test_a_server_that_never_answers_times_out_into_an_empty_final_draft():
    silent = SilentServer()
    engine = engine_for(silent.url, "any", prompt_format="fim", timeout=0.3)
    drafts = list(engine.complete(InfillRequest("x = ", "\n")))  # as-you-type: the short timeout
    assert [(d.text, d.final) for d in drafts] == [("", True)]
    assert silent.next_request(PATIENT)  # it was asked
    engine.close()
    silent.close()


def test_an_invoked_request_times_out_into_an_error_for_code_actions():
    silent = SilentServer()
    engine = engine_for(silent.url, "any", prompt_format="fim", invoked_timeout=0.3)
    with pytest.raises(RemoteError, match="did not answer within 0.3 s"):
        engine.text(InfillRequest("x = ", "\n", invoked=True))
    engine.close()
    silent.close()


def test_cancelling_closes_the_http_request():
    silent = SilentServer()
    engine = engine_for(silent.url, "any", prompt_format="fim")
    cancel = threading.Event()
    drafts: list = []
    worker = threading.Thread(target=lambda: drafts.extend(engine.complete(REQUEST, cancel.is_set)))
    worker.start()
    request = silent.next_request(PATIENT)
    cancel.set()
    worker.join()
    assert drafts == []  # cancelled: no final draft
    assert request.closed_by_client.wait(PATIENT)  # the server saw the connection closed
    engine.close()
    silent.close()


def test_the_api_key_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("DIFFUSION_INFILL_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "from-openai")
    assert api_key() == "from-openai"
    monkeypatch.setenv("DIFFUSION_INFILL_API_KEY", "ours")
    assert api_key() == "ours"


def to(credentials: Credentials, url: str) -> str | None:
    """The key a request to `url` carries."""
    return credentials.attach(RemoteSettings(url, "m")).api_key


def test_the_api_key_goes_only_to_the_url_it_was_configured_for(monkeypatch):
    monkeypatch.setenv("DIFFUSION_INFILL_API_KEY", "secret")
    monkeypatch.setenv("DIFFUSION_INFILL_API_URL", "http://from-the-environment/v1")
    command_line = Credentials.from_environment("http://gpu-box:8000/v1")
    assert to(command_line, "http://gpu-box:8000/v1/") == "secret"
    assert to(command_line, "http://elsewhere:8000/v1") is None
    assert to(command_line, "http://from-the-environment/v1") is None  # the command line's URL wins
    assert to(Credentials.from_environment(None), "http://from-the-environment/v1") == "secret"
    monkeypatch.delenv("DIFFUSION_INFILL_API_URL")
    assert to(Credentials.from_environment(None), "http://gpu-box:8000/v1") is None  # configured for no URL
    assert "secret" not in repr(command_line) + repr(command_line.attach(RemoteSettings("http://gpu-box:8000/v1", "m")))


def test_the_clamped_canvas_is_the_gap_then_the_pinned_suffix_head():
    canvas = clamped_canvas([11, 12, 13], gap=5, noise_vocab=100, rng=random.Random(0))
    assert len(canvas.seed) == 8 and canvas.seed[5:] == [11, 12, 13]
    assert all(0 <= token < 100 for token in canvas.seed[:5])
    assert canvas.pinned == [5, 6, 7]


def test_the_diffusion_arguments_meet_vllms_validation():
    """The rules of vllm/utils/diffusion.py (validate_diffusion_sampling_params): the seed holds
    exactly diffusion_canvas_length ids below the vocabulary, pins lie inside it and need a seed,
    diffusion_max_steps is positive."""
    vocab = 262_144
    xargs = clamped_canvas([7, 8], gap=4, noise_vocab=vocab, rng=random.Random(1)).xargs(max_steps=12)
    assert set(xargs) == {"diffusion_canvas_length", "diffusion_seed_canvas", "diffusion_pinned", "diffusion_max_steps"}
    width, seed, pins = xargs["diffusion_canvas_length"], xargs["diffusion_seed_canvas"], xargs["diffusion_pinned"]
    assert isinstance(width, int) and width > 0 and len(seed) == width
    assert all(isinstance(token, int) and 0 <= token < vocab for token in seed)
    assert all(0 <= pin < width for pin in pins)
    assert xargs["diffusion_max_steps"] == 12
    assert "diffusion_pinned" not in clamped_canvas([], 4, vocab, random.Random(0)).xargs(None)


def test_single_line_shaping_applies_to_server_answers(chat_engine):
    engine = RemoteEngine(chat_engine.remote, EngineSettings(mode="single-line"))
    final = list(engine.complete(InfillRequest("", "", "python", invoked=True)))[-1]
    assert "\n" not in final.text
    engine.close()


class _TokenizeReplies(http.server.BaseHTTPRequestHandler):
    """Answers every POST (vLLM's /tokenize among them) with valid JSON that is not what the API promises."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"tokens": "not a list"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def test_a_reply_without_what_the_api_promises_is_the_servers_malformed_reply():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TokenizeReplies)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    engine = engine_for(url, "any", prompt_format="diffusion")
    with pytest.raises(RemoteError, match=rf"^{re.escape(url)} sent a malformed reply \(MalformedReply: "):
        list(engine.complete(InfillRequest("x = ", "\n")))
    engine.close()
    server.shutdown()


def test_an_error_of_this_code_is_raised_as_itself_not_blamed_on_the_server():
    # three markers are needed; two is a mistake here, before anything is sent
    engine = engine_for(f"http://127.0.0.1:{free_port()}/v1", "any", prompt_format="fim", fim_tokens=("<a>", "<b>"))
    with pytest.raises(ValueError, match="not enough values to unpack") as raised:
        list(engine.complete(InfillRequest("x = ", "\n")))
    assert not isinstance(raised.value, RemoteError)
    engine.close()
