"""Completions from an OpenAI-compatible server: vLLM serving DiffusionGemma on a GPU box,
or `transformers serve`, instead of a checkpoint in this process.

Three ways to ask, found out once by a probe (or set by `prompt_format`):
- "diffusion": vLLM's per-request diffusion arguments (`vllm_xargs`, validated by
  `vllm/utils/diffusion.py`): the instruction prompt through chat completions, and the
  clamped canvas this project's engine uses: the gap as seed slots (noise the model
  denoises), then the suffix head, tokenized by the server's /tokenize and pinned, so the
  insertion must run into the text after the cursor.
- "chat": the instruction prompt of the in-process instruct path (diffusion_infill.engine.completion.chat_prompt).
- "fim": plain completions of a fill-in-the-middle prompt (the baseline's tokens by default).

The server streams text as it is generated; vLLM's diffusion models send a whole canvas
at once, so there the drafts are the final answer. Every request runs on one event loop
thread of this engine; the caller's thread waits on a queue, so cancelling closes the
HTTP request at once, and a request that outlives its timeout answers nothing.
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
from dataclasses import dataclass, replace
from typing import Any

import openai

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion.chat_prompt import CONTEXT_CHARS, answer_text, instruction
from diffusion_infill.engine.remote.errors import RemoteError
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.repair.spans import Span, merge
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.streaming import Cancelled
from diffusion_infill.engine.tokens import never_written_texts

log = logging.getLogger(__name__)

_POLL_S = 0.02  # how often the waiting thread looks at its cancel flag
FENCE_TOKENS = 8  # a chat answer may wrap the insertion in a code fence (engine.completion.chat_prompt.answer_text)


class RemoteTimeout(RemoteError):
    """No complete answer within the timeout."""


async def _without_authorization(request) -> None:
    """The OpenAI client always sends a bearer token (from OPENAI_API_KEY when given none): without
    a key for this server, nothing is sent."""
    request.headers.pop("Authorization", None)


class MalformedReply(ValueError):
    """A reply that parsed but does not hold what the API promises."""


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


def before_head(text: str, head: str) -> str:
    """The insertion in a canvas answer: everything before the pinned suffix head, when it came back."""
    at = text.rfind(head) if head else -1
    return text[:at] if at >= 0 else text


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
        (time.monotonic). Either way the coroutine is cancelled, which closes its HTTP request."""
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
        self.format: str | None = None if remote.prompt_format == "auto" else remote.prompt_format
        if self.format is not None:
            log.info("%s at %s: using the %s prompt format, as configured", remote.model, remote.url, self.format)
        self._rng = random.Random(seed)
        self._loop = _Loop()
        anonymous = (
            None
            if remote.api_key
            else openai.DefaultAsyncHttpxClient(event_hooks={"request": [_without_authorization]})
        )
        self._client = openai.AsyncOpenAI(
            base_url=remote.url,
            api_key=remote.api_key or "none",
            max_retries=0,
            timeout=remote.invoked_timeout,
            http_client=anonymous,
        )

    def close(self) -> None:
        self._loop.close(self._client)

    # -- finding out what the server can do

    def probe(self, timeout: float | None = None) -> str:
        """The prompt format this server takes (asked once; RemoteError when it answers none)."""
        if self.format is None:
            chosen = self._wait(self._probe(), timeout or self.remote.invoked_timeout)
            log.info("%s at %s: using the %s prompt format", self.remote.model, self.remote.url, chosen)
            self.format = chosen
        return self.format

    async def _probe(self) -> str:
        # An invalid diffusion argument tells the servers apart without generating anything:
        # vLLM serving a diffusion model rejects it naming the argument (vllm/utils/diffusion.py),
        # other servers reject the unknown field, or ignore it and answer.
        try:
            await self._chat_probe({"vllm_xargs": {"diffusion_max_steps": 0}})
        except openai.BadRequestError as error:
            if "diffusion_max_steps" in str(error):
                return "diffusion"
        except openai.APIStatusError:
            pass
        try:
            await self._chat_probe(None)
            return "chat"
        except openai.APIStatusError as error:
            chat_refused = error
        try:
            await _opened(lambda: self._client.completions.create(model=self.remote.model, prompt="x", max_tokens=1))
            return "fim"
        except openai.APIStatusError as error:
            raise RemoteError(
                f"{self.remote.url} accepts neither chat ({_status(chat_refused)}) nor plain "
                f"completions ({_status(error)}) for {self.remote.model}"
            ) from None

    async def _chat_probe(self, extra: dict | None) -> None:
        await _opened(
            lambda: self._client.chat.completions.create(
                model=self.remote.model, max_tokens=1, extra_body=extra, messages=[{"role": "user", "content": "1"}]
            )
        )

    # -- completions

    def complete(
        self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False, start_text: str | None = None
    ) -> Iterator[Draft]:
        """Yields a Draft per streamed piece, then a final closure-valid one; after the timeout the
        final draft is empty. RemoteError when the server fails. `start_text` is unused."""
        try:
            yield from self._drafts(request, self.settings, cancelled)
        except Cancelled:
            return
        except RemoteTimeout as error:
            log.debug("%s: %s; no completion", self.remote.url, error)
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
        deadline = time.monotonic() + timeout
        chosen = self.probe(timeout)
        raw, step, text = "", 0, ""
        for piece in self._loop_stream(chosen, request, cancelled, deadline, timeout):
            raw, step = raw + piece, step + 1
            answer = self._answer(chosen, raw, request)
            text = settings.shape(answer, request.prefix)
            yield Draft(text, step, 0.0, final=False)
            if text != answer and chosen != "diffusion":
                break  # one line was wanted and it has ended: the rest is not read (the request is closed)
        if not syntax_check.check(request.prefix, text, request.suffix, request.language).valid:
            text = syntax_check.longest_valid_prefix(request.prefix, text, request.suffix, request.language)
        yield Draft(text, step, 0.0, final=True, valid=True)

    def _answer(self, chosen: str, raw: str, request: InfillRequest) -> str:
        """The insertion in what the server sent so far: a fim middle as it is; a chat answer without
        its code fence; a canvas without the pinned suffix head that ends it."""
        if chosen == "fim":
            return raw
        if chosen == "diffusion":
            return before_head(answer_text(raw), request.suffix[: self.remote.suffix_head_chars])
        return answer_text(raw)

    def _loop_stream(
        self, chosen: str, request: InfillRequest, cancelled: Callable[[], bool], deadline: float, timeout: float
    ) -> Iterator[str]:
        pieces = {"diffusion": self._diffusion, "chat": self._chat, "fim": self._fim}[chosen]

        async def produce(emit: Callable[[str], None]) -> None:
            async for piece in self._guarded(pieces(request)):
                emit(piece)

        return self._loop.stream(produce, cancelled, deadline, self._late(timeout))

    def _wait(self, coroutine: Coroutine, timeout: float) -> Any:
        async def produce(emit: Callable[[Any], None]) -> None:
            emit(await self._guard(coroutine))

        for result in self._loop.stream(produce, lambda: False, time.monotonic() + timeout, self._late(timeout)):
            return result
        raise RemoteError(f"{self.remote.url}: no answer")

    def _late(self, timeout: float) -> str:
        return f"{self.remote.url} did not answer within {timeout:g} s"

    async def _guard(self, coroutine: Coroutine) -> Any:
        try:
            return await coroutine
        except Exception as error:
            explained = self._explained(error)
            if explained is None:
                raise  # a bug here, not the server's failure: it keeps its type and traceback
            raise explained from error

    async def _guarded(self, pieces: AsyncIterator[str]) -> AsyncIterator[str]:
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
        if isinstance(error, RemoteError):
            return error
        if isinstance(error, openai.APIConnectionError):
            return RemoteError(f"cannot reach {url}: {error.__cause__ or error}")
        if isinstance(error, openai.APIStatusError):
            return RemoteError(f"{url} answered {_status(error)}")
        if isinstance(error, (openai.APIError, json.JSONDecodeError, MalformedReply)):  # what the reply held
            return RemoteError(f"{url} sent a malformed reply ({type(error).__name__}: {error})")
        return None

    # -- the three prompt formats; each yields the answer's text as it streams in

    async def _chat(
        self, request: InfillRequest, max_tokens: int | None = None, extra: dict | None = None
    ) -> AsyncIterator[str]:
        stream = await _opened(
            lambda: self._client.chat.completions.create(
                model=self.remote.model,
                messages=[{"role": "user", "content": instruction(request)}],
                max_tokens=max_tokens or self.remote.max_tokens + FENCE_TOKENS,
                stream=True,
                extra_body=extra,
            )
        )
        async with stream:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    yield chunk.choices[0].delta.content

    async def _fim(self, request: InfillRequest) -> AsyncIterator[str]:
        before, after, middle = self.remote.fim_tokens
        prompt = f"{before}{request.prefix[-CONTEXT_CHARS:]}{after}{request.suffix[:CONTEXT_CHARS]}{middle}"
        stream = await _opened(
            lambda: self._client.completions.create(
                model=self.remote.model,
                prompt=prompt,
                max_tokens=self.remote.max_tokens,
                temperature=0.0,
                stop=list(self.remote.fim_stop) or None,
                stream=True,
            )
        )
        async with stream:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].text:
                    yield chunk.choices[0].text

    async def _diffusion(self, request: InfillRequest) -> AsyncIterator[str]:
        head = request.suffix[: self.remote.suffix_head_chars]
        canvas = clamped_canvas(await self._tokenize(head), self.remote.max_tokens, self.remote.noise_vocab, self._rng)
        # max_tokens: the one canvas is the whole answer
        xargs = canvas.xargs(self.remote.max_diffusion_steps)
        async for piece in self._chat(request, len(canvas.seed), {"vllm_xargs": xargs}):
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


async def _opened(request: Callable[[], Awaitable[Any]]) -> Any:
    """`request()`, sent once more when the connection failed: a kept-alive connection may have been
    closed by the server since (transformers serve closes it after answering 500)."""
    try:
        return await request()
    except openai.APIConnectionError as error:
        if isinstance(error, openai.APITimeoutError):
            raise
        return await request()


def _status(error: openai.APIStatusError) -> str:
    return f"{error.status_code}: {str(error.message)[:200]}"


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
