"""The autoregressive baseline: a causal LM of the embedded model's size, trained with a
fill-in-the-middle objective on the same corpus, decoded greedily with a KV cache.

It exists to be measured beside the diffusion engine (`src/diffusion_infill/bench/compare.py`), so it reads
exactly the same context (`prefix.encode_context`: prefix window, token healing, suffix
head), yields the same `Draft`s (one per forward pass) and ends with the same closure
rule (the insertion cut at the longest token boundary that keeps closure). The prompt is
PSM order (Bavarian et al., arXiv:2207.14255): <fim_prefix> prefix <fim_suffix> suffix
<fim_middle>, and the middle ends with the canvas's END token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PrefixConstrainedLogitsProcessor
from transformers.generation.streamers import BaseStreamer
from transformers.utils import logging as transformers_logging

from diffusion_infill.engine.checkpoint import ModelLoadError
from diffusion_infill.engine.completion.confidence import Calibration, assess
from diffusion_infill.engine.completion.insertion import insertion_text, longest_valid
from diffusion_infill.engine.completion.prefix import EncodedContext, encode_for, healing_candidates
from diffusion_infill.engine.devices import pick_device
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.streaming import Cancelled, stream_from_thread
from diffusion_infill.engine.tokens import BOS, END, FIM_TOKENS, PAD, never_written

SPEC_FILE = "fim.json"


@dataclass(frozen=True)
class FimSpec:
    """How a baseline checkpoint was trained to read its prompt; saved beside its weights.
    The defaults are the embedded diffusion model's context (diffusion_infill.engine.completion.canvas.CanvasSpec)."""

    max_prefix: int = 128  # prefix tokens
    suffix_head: int = 8  # suffix tokens after the cursor
    max_middle: int = 24  # insertion tokens at most, END not counted
    context_tokens: int = 0  # of max_prefix, tokens given to related lines from further up (as CanvasSpec)

    def save(self, directory: Path) -> None:
        (directory / SPEC_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> FimSpec:
        return cls(**json.loads((directory / SPEC_FILE).read_text()))


@dataclass(frozen=True)
class FimIds:
    prefix: int
    suffix: int
    middle: int
    end: int
    bos: int
    pad: int

    @classmethod
    def from_tokenizer(cls, tokenizer) -> FimIds:
        lookup = tokenizer.convert_tokens_to_ids
        return cls(*(lookup(token) for token in (*FIM_TOKENS, END, BOS, PAD)))


def fim_prompt(prefix_ids: list[int], suffix_ids: list[int], ids: FimIds) -> list[int]:
    """The prompt in training and inference alike; the middle follows it."""
    return [ids.prefix, *prefix_ids, ids.suffix, *suffix_ids, ids.middle]


@dataclass
class FimModel:
    model: torch.nn.Module  # a transformers causal LM
    tokenizer: object
    spec: FimSpec
    ids: FimIds
    source: str

    @property
    def canvas_problem(self) -> str:
        """The clamped-canvas repairs (code actions) cannot use a left-to-right model."""
        return f"{self.source} is the autoregressive baseline, not trained on the infill canvas"


def load_fim(path: Path, device: str | None = None) -> FimModel:
    """A baseline checkpoint from a local directory (nothing is downloaded), in float32."""
    if not (path / SPEC_FILE).is_file():
        raise ModelLoadError(
            f"no autoregressive baseline at {path} (missing {SPEC_FILE}); "
            "train one with `diffusion-infill train --objective fim`"
        )
    transformers_logging.disable_progress_bar()  # stderr belongs to the editor's log (serve --model fim_model)
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=torch.float32, local_files_only=True, use_kernels=False
    )  # no code from the Hub (engine.loading)
    model = model.to(pick_device(device)).eval()
    return FimModel(model, tokenizer, FimSpec.load(path), FimIds.from_tokenizer(tokenizer), str(path))


class TokenStreamer(BaseStreamer):
    """Hands the tokens each forward pass adds to `emit` (several when prompt lookup's draft is
    accepted); raises Cancelled between forward passes."""

    def __init__(self, emit: Callable[[list[int]], None], cancelled: Callable[[], bool]):
        self.emit, self.cancelled = emit, cancelled
        self.prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:  # generate() first puts the prompt
            self.prompt_seen = True
            return
        if self.cancelled():
            raise Cancelled
        self.emit(value.reshape(-1).tolist())

    def end(self) -> None:
        pass


PROMPT_LOOKUP_TOKENS = 10  # draft tokens checked per forward pass (transformers' prompt lookup decoding)
# Prompt lookup pays only where the text before the cursor repeats earlier text at length. Elsewhere
# transformers falls back to one-token matches, which nearly always find some earlier occurrence, so
# almost every step checks 10 wrong guesses: on 200 tuning cases (bench --case-seed 20261213) lookup cost
# 1.28x the CPU time of plain greedy decoding, and 1.14x on the 13 whose last 5 to 14 tokens before the
# cursor occur earlier in the prompt (the longest match there); a line typed again after two copies
# matches more than 16 and takes 3 passes instead of 7 (docs/performance.md, "The baseline's counterpart").
LOOKUP_MIN_MATCH = 16


def prompt_lookup(ids: list[int], max_ngram: int, tokens: int) -> tuple[int, list[int]]:
    """What transformers' PromptLookupCandidateGenerator guesses after `ids` (no logits processor, no EOS):
    the `tokens` that followed the first earlier occurrence of the longest n-gram ending `ids`, n at most
    `max_ngram`, with that n; (0, []) when none occurs with a token after it. The same search as
    transformers', pinned to it by tests/engine/baseline/test_autoregressive.py."""
    length = len(ids)
    for size in range(min(max_ngram, length - 1), 0, -1):
        tail = ids[-size:]
        for start in range(length - size):  # the tail itself has nothing after it
            if ids[start : start + size] == tail:
                return size, ids[start + size : min(start + size + tokens, length)]
    return 0, []


def lookup_pays(context: EncodedContext, ids: FimIds) -> bool:
    """Whether the last LOOKUP_MIN_MATCH tokens before the cursor occur earlier in the prompt (before them)."""
    before_cursor = [ids.prefix, *context.prefix_ids]
    return prompt_lookup(before_cursor, LOOKUP_MIN_MATCH, 1)[0] == LOOKUP_MIN_MATCH


class AutoregressiveEngine:
    """Greedy fill-in-the-middle completions with the `complete` contract of the other engines."""

    def __init__(self, loaded: FimModel, settings: EngineSettings | None = None):
        self.loaded = loaded
        self.settings = settings or EngineSettings()
        self.calibration = Calibration.load(loaded.source)  # None: completions get no confidence estimate
        self.suppressed = list(never_written(loaded.tokenizer, loaded.ids.end))

    def _generate_options(self, context: EncodedContext, prompt_length: int, prefix: str) -> dict:
        ids, tokenizer = self.loaded.ids, self.loaded.tokenizer
        minimum = self.settings.min_insertion_tokens + bool(context.healed)
        # The scores of the tokens kept (prompt lookup's rejected guesses are not among them) give the
        # evidence of the confidence estimate.
        options = dict(
            max_new_tokens=(self.settings.max_gap_tokens or self.loaded.spec.max_middle) + 1,
            min_new_tokens=minimum,
            do_sample=False,
            eos_token_id=ids.end,
            pad_token_id=ids.pad,
            suppress_tokens=self.suppressed,
            output_scores=True,
            return_dict_in_generate=True,
        )
        if self.settings.document_drafts and (self.settings.prompt_lookup_always or lookup_pays(context, ids)):
            # prompt lookup (draft-token) decoding: the tokens that followed the last ones earlier in the
            # prompt are checked in one forward pass and kept up to the first the model would not write
            options["prompt_lookup_num_tokens"] = PROMPT_LOOKUP_TOKENS
        if context.healed:
            # tensors, not lists: a list of every token id is turned into a tensor at each call, and prompt
            # lookup calls the processor for every guess it checks (about half its overhead, measured on 20 cases)
            allowed = torch.tensor(healing_candidates(tokenizer, context.healed), dtype=torch.long)
            everything = torch.arange(len(tokenizer))
            first = PrefixConstrainedLogitsProcessor(
                lambda _batch, sent: allowed if len(sent) == prompt_length else everything, num_beams=1
            )
            options["logits_processor"] = [first]
        if not self.settings.multi_line(prefix):
            options.update(stop_strings=["\n"], tokenizer=tokenizer)
        return options

    def complete(
        self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False, start_text: str | None = None
    ) -> Iterator[Draft]:
        """Yields a Draft per forward pass (one token each), then a final closure-valid one.
        `start_text` is unused: greedy decoding has nothing to warm-start."""
        ids = self.loaded.ids
        one_line = not self.settings.multi_line(request.prefix)
        context = encode_for(self.loaded, request.prefix, request.suffix)
        prompt = fim_prompt(context.prefix_ids, context.suffix_ids, ids)
        input_ids = torch.tensor([prompt], device=self.loaded.model.device)
        options = self._generate_options(context, len(prompt), request.prefix)
        scores: list[torch.Tensor] = []

        def work(emit) -> None:
            with torch.no_grad():
                out = self.loaded.model.generate(input_ids, streamer=TokenStreamer(emit, cancelled), **options)
            scores.extend(out.scores)

        started = time.perf_counter()
        tokens: list[int] = []
        step, text, first_ms = 0, "", 0.0
        for added in stream_from_thread(work, "fim-generate"):
            step += 1
            first_ms = first_ms or (time.perf_counter() - started) * 1000
            written = [token for token in added if token != ids.end]  # END is the last token generate() hands out
            if written:
                tokens += written
                text = insertion_text(self.loaded.tokenizer, tokens, context.healed, one_line)
                yield Draft(text, step, 0.0, final=False, prefill_ms=first_ms)
        if cancelled():
            return
        text = longest_valid(self.loaded.tokenizer, tokens, context.healed, one_line, request)
        full = insertion_text(self.loaded.tokenizer, tokens, context.healed, one_line)
        logprobs = [float(torch.log_softmax(score[0].float(), dim=-1).max()) for score in scores]
        found, confidence = assess(
            self.calibration, logprobs[: len(tokens) + 1], text, request.prefix, cut=text != full
        )
        yield Draft(text, step, 0.0, final=True, valid=True, prefill_ms=first_ms, confidence=confidence, evidence=found)
