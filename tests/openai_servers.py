"""Real servers for diffusion_infill.engine.remote.client's tests: `transformers serve` (an OpenAI-compatible server,
extra `transformers[serving]`) on a free port, a TCP peer that takes a request and never
answers (what a hung server looks like from the client: timeouts and cancellation), and a
scripted server whose answers are a function of the prompt (deterministic protocol tests)."""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from diffusion_infill.engine.tokens import FIM_TOKENS

START_TIMEOUT_S = 300  # importing torch and transformers on a busy 2-core machine


def free_port() -> int:
    """A port nothing listens on (the OS picked it free; it is closed again at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CHAT_TEMPLATE = (  # the same minimal template as tests/engine/completion/test_instruct.py
    "{% for message in messages %}<bos>{{ message['role'] }}\n{{ message['content'] }}<eos>{% endfor %}"
    "{% if add_generation_prompt %}<bos>model\n{% endif %}"
)


def with_chat_template(checkpoint: Path, target: Path) -> Path:
    """A copy of `checkpoint` whose tokenizer has a chat template, so the server takes chat requests."""
    shutil.copytree(checkpoint, target)
    config = json.loads((target / "tokenizer_config.json").read_text())
    (target / "tokenizer_config.json").write_text(json.dumps({**config, "chat_template": CHAT_TEMPLATE}))
    return target


@dataclass
class TransformersServe:
    """`transformers serve` on a free localhost port; it loads each model a request names (a local
    path), and `start` loads `models` before returning."""

    models: list[Path]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        command = shutil.which("transformers", path=str(Path(sys.executable).parent))
        assert command, "transformers[serving] is installed with the dev extras"
        # USE_HUB_KERNELS=NO: the server loads with no layers fetched from the Hub (diffusion_infill.engine.loading)
        environment = dict(os.environ, HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1", USE_HUB_KERNELS="NO")
        self.process = subprocess.Popen(
            [command, "serve", "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"],
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._wait_healthy()
        for model in self.models:
            self._post("/v1/completions", {"model": str(model), "prompt": "x", "max_tokens": 1})

    def _post(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=START_TIMEOUT_S) as response:
            return json.load(response)

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited: {self.process.stderr.read()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)  # a process starting up has nothing to wait on but its port
        raise RuntimeError(f"transformers serve did not answer /health within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass(frozen=True)
class Request:
    """One request that reached the silent server, on its own connection."""

    head: bytes  # the request line and headers
    closed_by_client: threading.Event = field(default_factory=threading.Event)

    def header(self, name: str) -> str | None:
        lines = self.head.decode("latin-1").split("\r\n")[1:]
        values = [line.partition(":")[2].strip() for line in lines if line.partition(":")[0].lower() == name.lower()]
        return values[0] if values else None


class SilentServer:
    """Accepts connections and reads what is sent, never answers; each request head that arrives
    is put on `requests`, and its `closed_by_client` is set when the client hangs up."""

    def __init__(self):
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.requests: queue.Queue[Request] = queue.Queue()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_request(self, timeout: float) -> Request:
        return self.requests.get(timeout=timeout)

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        request, data = None, b""
        with connection:
            while chunk := connection.recv(65536):
                data += chunk
                if request is None and b"\r\n\r\n" in data:
                    request = Request(data.partition(b"\r\n\r\n")[0])
                    self.requests.put(request)
        if request is not None:
            request.closed_by_client.set()

    def close(self) -> None:
        self.socket.close()


Script = Callable[[str, str], str]  # (prefix, suffix) of a fill-in-the-middle prompt -> the middle to answer


class ScriptedServer:
    """An OpenAI-compatible server whose "model" is a function: each plain completion request's
    fill-in-the-middle prompt is split into its prefix and suffix and answered with `script(prefix,
    suffix)`, streamed a few characters a chunk. A deterministic engine for the protocol tests,
    reached through the real remote engine (`--engine openai --prompt-format fim`)."""

    CHUNK = 3  # characters per streamed piece: drafts arrive before the answer

    def __init__(self, script: Script, fim_tokens: tuple[str, str, str] = FIM_TOKENS):
        self.script, self.fim_tokens = script, fim_tokens
        self.prompts: list[tuple[str, str]] = []  # every (prefix, suffix) asked, in arrival order
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def middle(self, prompt: str) -> str:
        before, after, middle = self.fim_tokens
        prefix, _, rest = prompt.removeprefix(before).partition(after)
        suffix = rest.removesuffix(middle)
        self.prompts.append((prefix, suffix))
        return self.script(prefix, suffix)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path != "/v1/completions" or not body.get("stream"):
                    self.send_error(404, "only streamed plain completions are scripted")
                    return
                text = server.middle(body["prompt"])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for start in range(0, len(text), ScriptedServer.CHUNK):
                    self._event(
                        {
                            "id": "scripted",
                            "object": "text_completion",
                            "created": 0,
                            "model": body["model"],
                            "choices": [
                                {
                                    "index": 0,
                                    "text": text[start : start + ScriptedServer.CHUNK],
                                    "finish_reason": None,
                                    "logprobs": None,
                                }
                            ],
                        }
                    )
                self.wfile.write(b"data: [DONE]\n\n")

            def _event(self, data: dict) -> None:
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            def log_message(self, *args) -> None:  # the test output is not the place for an access log
                pass

        return Handler

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


# What vLLM answers, from its sources (vllm-project/vllm): the refusal of sampling parameters for a
# diffusion model (vllm/sampling_params.py, SamplingParams._validate_diffusion), the data-parallel
# rank check (vllm/v1/engine/input_processor.py, InputProcessor.process_inputs, right after
# _validate_params) and, in pull request #57250's build only, the diffusion arguments
# (vllm/utils/diffusion.py, validate_diffusion_sampling_params, at 718db345f5d6629842bbf381e140a578205ebe93).
DIFFUSION_REFUSAL = (
    "The temperature, min_p, seed, min_tokens, logit_bias, bad_words, and allowed_token_ids "
    "sampling parameters are not yet supported with diffusion models."
)
Canvas = Callable[[str, list[int]], str]  # (instruction, seed canvas or []) -> the canvas text answered


class VllmStandIn:
    """A scripted vLLM serving DiffusionGemma on loopback: `pull_request=False` is a released vLLM
    (chat completions answered with one whole canvas, per-request diffusion arguments ignored),
    True is the pull request's build (the arguments validated, the seed's pinned slots answered).
    Both refuse temperature for the diffusion model, think unless asked not to (the answer then goes
    to reasoning_content, as the gemma4 reasoning parser sends it), and tokenize one token a
    character (ids are code points). `generated` counts canvases drawn; `bodies` holds every request."""

    def __init__(self, canvas: Canvas, pull_request: bool, served_canvas: int = 256, pinned_reads_as=None):
        self.canvas, self.pull_request, self.served_canvas = canvas, pull_request, served_canvas
        self.pinned_reads_as = pinned_reads_as  # the PR writes its argmax at pinned slots: the head as read back
        self.generated = 0
        self.bodies: list[dict] = []
        self.headers: list[dict] = []
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def refusal(self, body: dict, headers) -> str | None:
        """Why vLLM refuses the request before generating, in its order of checks; None: it generates."""
        if body.get("temperature", 1.0) != 1.0 or body.get("seed") is not None or body.get("min_p"):
            return DIFFUSION_REFUSAL
        xargs = body.get("vllm_xargs") or {}
        if self.pull_request:
            steps = xargs.get("diffusion_max_steps")
            if steps is not None and not (isinstance(steps, int) and steps > 0):
                return "diffusion_max_steps must be a positive integer."
            width, seed = xargs.get("diffusion_canvas_length"), xargs.get("diffusion_seed_canvas")
            if seed is not None and len(seed) != (width or self.served_canvas):
                return f"diffusion_seed_canvas must hold exactly {width or self.served_canvas} ids, got {len(seed)}."
        rank = headers.get("X-data-parallel-rank")
        if rank is not None and not (0 <= int(rank) < 1):
            return f"data_parallel_rank {rank} is out of range [0, 1)."
        return None

    def answer(self, body: dict) -> tuple[str, str]:
        """The canvas text and its finish reason ("length": the whole canvas, its pinned head included)."""
        self.generated += 1
        xargs = (body.get("vllm_xargs") or {}) if self.pull_request else {}
        seed = xargs.get("diffusion_seed_canvas") or []
        prompt = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
        text = self.canvas(prompt, seed)
        pins = xargs.get("diffusion_pinned") or []
        if pins:
            head = "".join(chr(seed[pin]) for pin in pins)
            text += head if self.pinned_reads_as is None else self.pinned_reads_as(head)
            return text, "length"
        return text, "stop"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                server.headers.append(dict(self.headers))
                if self.path == "/tokenize":
                    self._json(200, {"tokens": [ord(c) for c in body["prompt"]], "count": len(body["prompt"])})
                    return
                refused = server.refusal(body, self.headers)
                if refused is not None:
                    self._json(400, {"error": {"message": refused, "type": "BadRequestError", "code": 400}})
                    return
                text, finish = server.answer(body)
                thinking = (body.get("chat_template_kwargs") or {}).get("enable_thinking", True)
                chat = self.path == "/v1/chat/completions"
                if not body.get("stream"):
                    message = {"role": "assistant", "content": text[:1]}
                    choice = {"index": 0, "message": message, "finish_reason": "length"}
                    self._json(200, {"id": "x", "object": "chat.completion", "created": 0, "choices": [choice]})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if chat and thinking:  # the budget goes to the trace; the content stays empty
                    delta, finish = {"reasoning_content": text}, "length"
                else:
                    delta = {"content": text}
                piece = {"index": 0, "finish_reason": finish, "logprobs": None}
                piece.update({"delta": delta} if chat else {"text": text})
                kind = "chat.completion.chunk" if chat else "text_completion"
                event = {"id": "x", "object": kind, "created": 0, "model": body["model"], "choices": [piece]}
                self.wfile.write(f"data: {json.dumps(event)}\n\ndata: [DONE]\n\n".encode())

            def _json(self, status: int, data: dict) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args) -> None:
                pass

        return Handler

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


class FaultyServer:
    """Answers every POST with `reply(handler)`: slow, endless, huge, redirecting, garbage or an error page."""

    def __init__(self, reply: Callable[[BaseHTTPRequestHandler], None]):
        self.reply = reply
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests += 1
                try:
                    server.reply(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client closed the request: what the bounded ones do

            def log_message(self, *args) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def events(handler: BaseHTTPRequestHandler, pieces, delay: float = 0.0) -> None:
    """Streams `pieces` as plain-completion events, `delay` seconds apart."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.end_headers()
    for text in pieces:
        chunk = {"id": "x", "object": "text_completion", "created": 0, "model": "m"}
        chunk["choices"] = [{"index": 0, "text": text, "finish_reason": None, "logprobs": None}]
        handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        handler.wfile.flush()
        time.sleep(delay)
    handler.wfile.write(b"data: [DONE]\n\n")


def body(handler: BaseHTTPRequestHandler, status: int, data: bytes, kind: str = "application/json", **headers) -> None:
    """One reply with `data` as its body."""
    handler.send_response(status)
    handler.send_header("Content-Type", kind)
    handler.send_header("Content-Length", str(len(data)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)
