"""Completions from an OpenAI-compatible server: vLLM serving DiffusionGemma on a GPU box,
or `transformers serve`, instead of a checkpoint in this process.

Three ways to ask, found out once per server by a probe (or set by `prompt_format`):
- "diffusion": vLLM's per-request diffusion arguments (`vllm_xargs`, validated by
  `vllm/utils/diffusion.py`, so far only in vLLM pull request #57250): the instruction prompt
  through chat completions, and the clamped canvas this project's engine uses: the gap as seed
  slots (noise the model denoises), then the suffix head, tokenized by the server's /tokenize and
  pinned, so the insertion must run into the text after the cursor.
- "chat": the instruction prompt of the in-process instruct path (diffusion_infill.engine.completion.chat_prompt);
  a released vLLM serving DiffusionGemma answers it with one whole canvas.
- "fim": plain completions of a fill-in-the-middle prompt (the baseline's tokens by default).

The server streams text as it is generated; vLLM's diffusion models send a whole canvas
at once, so there the drafts are the final answer. Every request of one completion (the probe,
a resend, the stream) runs within one deadline on one event loop thread of this engine; the
caller's thread waits on a queue, so cancelling closes the HTTP request at once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

import openai

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion.chat_prompt import CONTEXT_CHARS, answer_text, instruction
from diffusion_infill.engine.remote.errors import MalformedReply, RemoteError, server_text
from diffusion_infill.engine.remote.http import ServerClient
from diffusion_infill.engine.remote.readback import canvas_insertion
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.repair.spans import Span, merge
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.streaming import Cancelled
from diffusion_infill.engine.tokens import never_written_texts

log = logging.getLogger(__name__)

_POLL_S = 0.02  # how often the waiting thread looks at its cancel flag
FENCE_TOKENS = 8  # a chat answer may wrap the insertion in a code fence (engine.completion.chat_prompt.answer_text)
MAX_CHARS_PER_TOKEN = 64  # an answer longer than this per token asked for is cut (and its stream closed)
# Every chat request: a completion wants the answer, not a reasoning trace first. Published serve
# commands set --default-chat-template-kwargs '{"enable_thinking": true}' with the gemma4 reasoning
# parser; the trace then fills the token budget as reasoning_content and the answer is empty.
THINKING_OFF = {"chat_template_kwargs": {"enable_thinking": False}}
# vLLM's refusal of temperature, min_p, seed, min_tokens, logit_bias, bad_words and allowed_token_ids
# for a diffusion model (vllm/sampling_params.py, SamplingParams._validate_diffusion: temperature != 1.0)
REFUSED_FOR_DIFFUSION = "not yet supported with diffusion models"
# A data-parallel rank no server has: vLLM refuses it in InputProcessor.process_inputs right after
# validating the sampling parameters (and, in the pull request, the diffusion arguments), before
# anything is generated (vllm/v1/engine/input_processor.py); other servers ignore the header.
NO_RANK = {"X-data-parallel-rank": "-1"}
RANK_REFUSED = "data_parallel_rank"


class RemoteTimeout(RemoteError):
    """No complete answer within the timeout."""


@dataclass(frozen=True)
class Server:
    """What a server takes: found by the probe once per server (URL and model) in this process."""

    format: str  # "diffusion", "chat" or "fim"
    diffusion: bool | None = None  # a diffusion model, which refuses sampling parameters; None: not known


_SERVERS: dict[tuple[str, str], Server] = {}  # probed servers, shared by every engine in this process


def forget_servers() -> None:
    """Every probe result dropped: the next completion of each server probes again."""
    _SERVERS.clear()


def _server_root(url: str) -> str:
    """Where vLLM's /tokenize lives: the base URL without its /v1."""
    root = url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


@dataclass(frozen=True)
class Canvas:
    """vLLM's diffusion arguments for one completion: seed slots for the gap, then the suffix head pinned."""

    seed: list[int]
    pinned: list[int]

    def xargs(self, max_steps: int | None) -> dict[str, Any]:
        values: dict[str, Any] = {"diffusion_canvas_length": len(self.seed), "diffusion_seed_canvas": self.seed}
        if self.pinned:
            values["diffusion_pinned"] = self.pinned
        if max_steps is not None:
            values["diffusion_max_steps"] = max_steps
        return values


def clamped_canvas(head_ids: list[int], gap: int, noise_vocab: int, rng: random.Random) -> Canvas:
    """The gap as `gap` noise slots (DiffusionGemma starts from uniform noise, as `generate` does),
    followed by the suffix head's tokens, pinned: the canvas is exactly as long as the request needs."""
    seed = [rng.randrange(noise_vocab) for _ in range(gap)] + head_ids
    return Canvas(seed, list(range(gap, gap + len(head_ids))))


@dataclass(frozen=True)
class Piece:
    """Streamed answer text, and the finish reason when the server sent one."""

    text: str
    finish: str | None = None


class _Loop:
    """An event loop on its own thread, so requests can be cancelled from the engine thread."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="remote-http", daemon=True)
        self.thread.start()

    def stream(
        self,
        produce: Callable[[Callable[[Any], None]], Coroutine],
        cancelled: Callable[[], bool],
        deadline: float,
        late: str,
    ) -> Iterator[Any]:
        """Yields what `produce(emit)` emits; Cancelled when `cancelled()`, RemoteTimeout(late) at `deadline`
        (time.monotonic). Either way, and when the caller stops reading, the coroutine is cancelled,
        which closes its HTTP request."""
        items: queue.Queue = queue.Queue()
        done = object()
        future = asyncio.run_coroutine_threadsafe(produce(items.put), self.loop)
        future.add_done_callback(lambda _: items.put(done))
        try:
            while True:
                if cancelled():
                    raise Cancelled
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RemoteTimeout(late)
                try:
                    item = items.get(timeout=min(_POLL_S, left))
                except queue.Empty:
                    continue
                if item is done:
                    future.result()  # raises what the request raised
                    return
                yield item
        finally:
            future.cancel()

    def close(self, client: openai.AsyncOpenAI) -> None:
        """Closes `client`'s connections on this loop, then the loop."""
        asyncio.run_coroutine_threadsafe(client.close(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class RemoteEngine:
    """The `complete` contract of the in-process engines, answered by a server."""

    def __init__(self, remote: RemoteSettings, settings: EngineSettings | None = None, seed: int = 0):
        self.remote = remote
        self.settings = settings or EngineSettings()
        self._configured = None if remote.prompt_format == "auto" else Server(remote.prompt_format)
        if self._configured is not None:
            log.info(
                "%s at %s: using the %s prompt format, as configured", remote.model, remote.url, remote.prompt_format
            )
        self._rng = random.Random(seed)
        self._loop = _Loop()
        self._client = openai.AsyncOpenAI(
            base_url=remote.url,
            api_key=remote.api_key or "none",
            max_retries=0,
            timeout=remote.invoked_timeout,
            http_client=ServerClient(send_key=bool(remote.api_key)),
        )

    def close(self) -> None:
        self._loop.close(self._client)

    # -- finding out what the server can do

    @property
    def _key(self) -> tuple[str, str]:
        return self.remote.url.rstrip("/"), self.remote.model

    def probe(self, timeout: float | None = None) -> str:
        """The prompt format this server takes (probed once per server; RemoteError when it answers none)."""
        return self._wait(self._server(), timeout or self.remote.invoked_timeout).format

    async def _server(self) -> Server:
        known = _SERVERS.get(self._key)
        if self._configured is not None and (known is None or known.format != self._configured.format):
            known = self._configured
        if known is None:
            started = time.monotonic()
            known = await self._probe()
            _SERVERS[self._key] = known
            kind = {True: ", a diffusion model", False: "", None: ""}[known.diffusion]
            ms = (time.monotonic() - started) * 1000
            log.info(
                "%s at %s: using the %s prompt format%s (probed in %.0f ms)",
                self.remote.model,
                self.remote.url,
                known.format,
                kind,
                ms,
            )
        return known

    def _remember(self, server: Server) -> None:
        _SERVERS[self._key] = server

    async def _probe(self) -> Server:
        # Told apart without generating on vLLM: the pull request's build rejects an invalid diffusion
        # argument (vllm/utils/diffusion.py), a released vLLM ignores it and rejects the data-parallel
        # rank instead, both before any canvas is drawn. Other servers ignore both and answer one token.
        try:
            await self._chat_probe({"vllm_xargs": {"diffusion_max_steps": 0}})
            return Server("chat")
        except openai.BadRequestError as error:
            if "diffusion_max_steps" in str(error):
                return Server("diffusion", diffusion=True)
            if RANK_REFUSED in str(error):  # vLLM, and the chat template rendered
                return Server("chat", diffusion=await self._refuses_sampling(self._chat_probe))
        except openai.APIStatusError:
            pass
        try:
            await self._chat_probe(None)
            return Server("chat")
        except openai.APIStatusError as error:
            chat_refused = error
        try:
            return Server("fim", diffusion=await self._refuses_sampling(self._fim_probe))
        except openai.APIStatusError as error:
            raise RemoteError(
                f"{self.remote.url} accepts neither chat ({_status(chat_refused)}) nor plain "
                f"completions ({_status(error)}) for {self.remote.model}"
            ) from None

    async def _refuses_sampling(self, probe: Callable[..., Awaitable[None]]) -> bool | None:
        """Whether the server refuses temperature: a diffusion model on vLLM. None when it answered."""
        try:
            await probe({"temperature": 0.0})
        except openai.BadRequestError as error:
            if REFUSED_FOR_DIFFUSION in str(error):
                return True
            if RANK_REFUSED in str(error):
                return False
            raise
        return None

    async def _chat_probe(self, extra: dict | None) -> None:
        await _opened(
            lambda: self._client.chat.completions.create(
                model=self.remote.model,
                max_tokens=1,
                messages=[{"role": "user", "content": "1"}],
                extra_body={**THINKING_OFF, **(extra or {})},
                extra_headers=NO_RANK,
            )
        )

    async def _fim_probe(self, extra: dict | None) -> None:
        await _opened(
            lambda: self._client.completions.create(
                model=self.remote.model, prompt="x", max_tokens=1, extra_body=extra, extra_headers=NO_RANK
            )
        )

    # -- completions

    def complete(
        self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False, start_text: str | None = None
    ) -> Iterator[Draft]:
        """Yields a Draft per streamed piece, then a final closure-valid one. An as-you-type request
        past its timeout ends in an empty final draft; an invoked one raises RemoteTimeout (the editor
        is told). RemoteError when the server fails. `start_text` is unused."""
        try:
            yield from self._drafts(request, self.settings, cancelled)
        except Cancelled:
            return
        except RemoteTimeout as error:
            if request.invoked:
                raise
            log.debug("%s; no completion", error)
            yield Draft("", 0, 0.0, final=True, valid=True)

    def text(self, request: InfillRequest) -> str:
        """One closure-valid insertion that may span lines (code actions); RemoteError when there is none."""
        final = ""
        for draft in self._drafts(request, replace(self.settings, mode="multi-line"), lambda: False):
            final = draft.text
        return final

    def _drafts(
        self, request: InfillRequest, settings: EngineSettings, cancelled: Callable[[], bool]
    ) -> Iterator[Draft]:
        timeout = self.remote.invoked_timeout if request.invoked else self.remote.timeout
        late = f"{self.remote.url} did not answer within {timeout:g} s"
        stream = self._loop.stream(
            lambda emit: self._completion(request, emit), cancelled, time.monotonic() + timeout, late
        )
        server, raw, finish, step = Server("chat"), "", None, 0
        with closing(stream):
            for item in stream:
                if isinstance(item, Server):
                    server = item
                    continue
                raw, finish = raw + item.text, item.finish or finish
                if not item.text:
                    continue
                step += 1
                bound = self._max_chars(server)
                if len(raw) > bound:
                    log.warning("%s sent more than %d characters for one completion: cut there", self.remote.url, bound)
                    raw = raw[:bound]
                answer = self._answer(server, raw, request, finish)
                text = settings.shape(answer, request.prefix)
                yield Draft(text, step, 0.0, final=False)
                if len(raw) == bound or (text != answer and server.format != "diffusion"):
                    break  # one line was wanted and it has ended, or it is too long: the request is closed
        text = settings.shape(self._answer(server, raw, request, finish), request.prefix)
        if not syntax_check.check(request.prefix, text, request.suffix, request.language).valid:
            text = syntax_check.longest_valid_prefix(request.prefix, text, request.suffix, request.language)
        yield Draft(text, step, 0.0, final=True, valid=True)

    def _max_chars(self, server: Server) -> int:
        """The longest answer a request could use: the tokens it asked for, generously counted."""
        asked = {
            "diffusion": self.remote.max_tokens + self.remote.suffix_head_chars,
            "chat": self.remote.max_tokens + FENCE_TOKENS,
            "fim": self.remote.max_tokens,
        }[server.format]
        return asked * MAX_CHARS_PER_TOKEN

    def _answer(self, server: Server, raw: str, request: InfillRequest, finish: str | None) -> str:
        """The insertion in what the server sent so far: a fim middle as it is; a chat answer without
        its code fence; a canvas without the pinned suffix head that ends it."""
        if server.format == "fim":
            return raw
        if server.format == "diffusion":
            return canvas_insertion(raw, request.suffix[: self.remote.suffix_head_chars], whole=finish == "length")
        return answer_text(raw)

    async def _completion(self, request: InfillRequest, emit: Callable[[Any], None]) -> None:
        """One completion's requests: the probe when this server has none yet, then the answer's pieces."""
        server = await self._guard(self._server())
        emit(server)
        pieces = {"diffusion": self._diffusion, "chat": self._chat, "fim": self._fim}[server.format]
        try:
            async for piece in self._guarded(pieces(server, request)):
                emit(piece)
        except RemoteError as error:
            if isinstance(error.__cause__, openai.BadRequestError):
                _SERVERS.pop(self._key, None)  # the server may have changed: the next completion probes again
            raise

    def _wait(self, coroutine: Coroutine, timeout: float) -> Any:
        async def produce(emit: Callable[[Any], None]) -> None:
            emit(await self._guard(coroutine))

        late = f"{self.remote.url} did not answer within {timeout:g} s"
        for result in self._loop.stream(produce, lambda: False, time.monotonic() + timeout, late):
            return result
        raise RemoteError(f"{self.remote.url}: no answer")

    async def _guard(self, coroutine: Coroutine) -> Any:
        try:
            return await coroutine
        except Exception as error:
            explained = self._explained(error)
            if explained is None:
                raise  # a bug here, not the server's failure: it keeps its type and traceback
            raise explained from error

    async def _guarded(self, pieces: AsyncIterator[Piece]) -> AsyncIterator[Piece]:
        try:
            async for piece in pieces:
                yield piece
        except Exception as error:
            explained = self._explained(error)
            if explained is None:
                raise
            raise explained from error

    def _explained(self, error: Exception) -> RemoteError | None:
        """The server's failure as a RemoteError; None for an error of this code's own."""
        url = self.remote.url
        cause = error.__cause__ if isinstance(error, openai.APIConnectionError) else None
        if isinstance(error, RemoteError):
            return error
        if isinstance(error, openai.APIStatusError) and error.response.is_redirect:
            following = error.response.next_request
            where = following.url if following else error.response.headers.get("location", "nowhere")
            return RemoteError(f"{url} redirected to {where}: not followed, the code goes only to {url}")
        if isinstance(error, openai.APIStatusError):
            return RemoteError(f"{url} answered {_status(error)}")
        if isinstance(cause, (MalformedReply, UnicodeDecodeError)):
            error = cause
        elif isinstance(error, openai.APIConnectionError):
            return RemoteError(f"cannot reach {url}: {cause or error}")
        if isinstance(error, (openai.APIError, json.JSONDecodeError, UnicodeDecodeError, MalformedReply)):
            return RemoteError(f"{url} sent a malformed reply ({type(error).__name__}: {server_text(str(error))})")
        return None

    # -- the three prompt formats; each yields the answer's text as it streams in

    async def _chat(
        self, server: Server, request: InfillRequest, max_tokens: int | None = None, extra: dict | None = None
    ) -> AsyncIterator[Piece]:
        stream = await _opened(
            lambda: self._client.chat.completions.create(
                model=self.remote.model,
                messages=[{"role": "user", "content": instruction(request)}],
                max_tokens=max_tokens or self.remote.max_tokens + FENCE_TOKENS,
                stream=True,
                extra_body={**THINKING_OFF, **(extra or {})},
            )
        )
        answered, reasoned = False, False
        async with stream:
            async for choice in _choices(stream):
                delta = getattr(choice, "delta", None)
                text = _text(getattr(delta, "content", None))
                answered = answered or bool(text)
                reasoned = reasoned or _reasons(delta)
                yield Piece(text, getattr(choice, "finish_reason", None))
        if reasoned and not answered:
            log.warning(
                "%s answered with reasoning only, though enable_thinking was false: start vLLM without "
                "--reasoning-parser or with --default-chat-template-kwargs '{\"enable_thinking\": false}'",
                self.remote.url,
            )

    async def _fim(self, server: Server, request: InfillRequest) -> AsyncIterator[Piece]:
        greedy = {} if server.diffusion else {"temperature": 0.0}  # a diffusion model refuses any temperature
        try:
            stream = await self._fim_stream(request, greedy)
        except openai.BadRequestError as error:
            if not greedy or REFUSED_FOR_DIFFUSION not in str(error):
                raise
            self._remember(replace(server, diffusion=True))
            stream = await self._fim_stream(request, {})
        async with stream:
            async for choice in _choices(stream):
                yield Piece(_text(getattr(choice, "text", None)), getattr(choice, "finish_reason", None))

    async def _fim_stream(self, request: InfillRequest, sampling: dict) -> Any:
        before, after, middle = self.remote.fim_tokens
        prompt = f"{before}{request.prefix[-CONTEXT_CHARS:]}{after}{request.suffix[:CONTEXT_CHARS]}{middle}"
        return await _opened(
            lambda: self._client.completions.create(
                model=self.remote.model,
                prompt=prompt,
                max_tokens=self.remote.max_tokens,
                stop=list(self.remote.fim_stop) or None,
                stream=True,
                **sampling,
            )
        )

    async def _diffusion(self, server: Server, request: InfillRequest) -> AsyncIterator[Piece]:
        head = request.suffix[: self.remote.suffix_head_chars]
        canvas = clamped_canvas(await self._tokenize(head), self.remote.max_tokens, self.remote.noise_vocab, self._rng)
        # max_tokens: the one canvas is the whole answer
        xargs = canvas.xargs(self.remote.max_diffusion_steps)
        async for piece in self._chat(server, request, len(canvas.seed), {"vllm_xargs": xargs}):
            yield piece

    async def _tokenize(self, text: str) -> list[int]:
        """vLLM's /tokenize, without special tokens: the ids the served model reads `text` as."""
        if not text:
            return []
        reply = await _opened(
            lambda: self._client.post(
                f"{_server_root(self.remote.url)}/tokenize",
                cast_to=object,
                body={"model": self.remote.model, "prompt": text, "add_special_tokens": False},
            )
        )
        tokens = reply.get("tokens") if isinstance(reply, dict) else None
        if not isinstance(tokens, list) or not all(isinstance(token, int) for token in tokens):
            raise MalformedReply(f"/tokenize sent {str(reply)[:200]}")
        return tokens


async def _choices(stream: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """The first choice of each streamed chunk; MalformedReply for a chunk without a list of choices,
    or a stream that held none (a server answering a stream with something else)."""
    chunks = 0
    async for chunk in stream:
        choices = getattr(chunk, "choices", None)
        if not isinstance(choices, list):
            raise MalformedReply(f"a streamed chunk without choices: {str(chunk)[:200]}")
        chunks += 1
        if choices:
            yield choices[0]
    if not chunks:
        raise MalformedReply("the stream held no completion chunk")


def _reasons(delta: Any) -> bool:
    """Whether a chat delta holds reasoning (vLLM's reasoning parsers: reasoning_content, newer: reasoning)."""
    return bool(getattr(delta, "reasoning_content", None) or getattr(delta, "reasoning", None))


def _text(value: Any) -> str:
    if value is None or isinstance(value, str):
        return value or ""
    raise MalformedReply(f"a streamed text that is a {type(value).__name__}")


async def _opened(request: Callable[[], Awaitable[Any]]) -> Any:
    """`request()`, sent once more when the connection failed: a kept-alive connection may have been
    closed by the server since (transformers serve closes it after answering 500). Within the
    completion's one deadline, as every request is."""
    try:
        return await request()
    except openai.APIConnectionError as error:
        if isinstance(error, openai.APITimeoutError) or isinstance(error.__cause__, MalformedReply):
            raise
        return await request()


def _status(error: openai.APIStatusError) -> str:
    """The status and the server's words: the error's message from JSON, else the body's text (an error page)."""
    said = error.body if isinstance(error.body, str) and error.body else str(error.message)
    return f"{error.status_code}: {server_text(said)}"


@dataclass(frozen=True)
class RemoteRepairSettings:
    max_gaps: int = 8  # damaged spans filled one request each; more are merged from the nearest ones on


class RemoteRepairer:
    """The code actions' model side (diffusion_infill.engine.repair.fixes) on a server: every damaged span, or the whole
    selection to regenerate, is an infill request between the text around it."""

    def __init__(self, engine: RemoteEngine, settings: RemoteRepairSettings | None = None):
        self.engine = engine
        self.settings = settings or RemoteRepairSettings()
        # what engine.repair.fixes keeps out of every candidate; the server's own special tokens are not
        # visible from here, its prompt's markers and stop strings are
        self.special_texts = never_written_texts(None, *engine.remote.fim_tokens, *engine.remote.fim_stop)

    def fill(self, before: str, text: str, spans: list[Span], after: str, renoise: float | None = None) -> list[str]:
        """One candidate: the spans filled left to right, each request seeing the ones filled before."""
        filled, shift = text, 0
        for span in merge(spans, self.settings.max_gaps):
            start, end = span.start + shift, span.end + shift
            insertion = self.engine.text(InfillRequest(before + filled[:start], filled[end:] + after, invoked=True))
            filled = filled[:start] + insertion + filled[end:]
            shift += len(insertion) - (end - start)
        return [filled]

    def regenerate(self, before: str, text: str, after: str) -> list[str]:
        return [self.engine.text(InfillRequest(before, after, invoked=True))]
