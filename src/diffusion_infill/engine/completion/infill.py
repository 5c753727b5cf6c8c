"""One inline completion: text around the cursor in, converging drafts out.

`InfillEngine.complete` reads top to bottom, and the pieces it calls follow it in that order:

1. begin: the prefix encoded (its KV cache reused when this prefix extends the last one,
   engine.completion.prefix_cache) and the canvas laid out, gap slots + clamped suffix head
   (engine.completion.canvas); the gap starts short, a cheaper step;
2. denoise: the sampler's steps over the canvas (engine.completion.sampler), a Draft each;
3. grow: a short gap the model filled without END grows to the trained size, its first slots
   holding what was written, and is denoised once more;
4. repair: an insertion that breaks closure (engine.syntax_check) is re-noised from its first
   offending slot and denoised again, up to repair_rounds times;
5. answer: the insertion, or its longest prefix that keeps closure, with its evidence and
   (when the checkpoint is calibrated) its confidence.

A single-line request is first offered the best line copied from the code as the model judges
it (engine.completion.copied_lines, engine.completion.judge); denoising starts when none is good enough.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace

import torch
from transformers.cache_utils import DynamicCache

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion import copied_lines, judge
from diffusion_infill.engine.completion.confidence import Calibration, SlotLogprobs, assess
from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings
from diffusion_infill.engine.completion.insertion import insertion_text, longest_valid
from diffusion_infill.engine.completion.prefix import EncodedContext, encode_for, healing_candidates
from diffusion_infill.engine.completion.prefix_cache import PrefixCache
from diffusion_infill.engine.completion.sampler import PassLog, SlotBan, SlotVocabulary, Step, denoise
from diffusion_infill.engine.loading import LoadedModel
from diffusion_infill.engine.requests import REVISED, Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings


@dataclass
class _Completion:
    """One completion between its rounds: the canvas the next pass denoises, where it starts, and
    the evidence gathered over every pass so far."""

    request: InfillRequest
    one_line: bool  # only the insertion's first line is wanted (EngineSettings.multi_line)
    context: EncodedContext
    cache: DynamicCache
    prefill_ms: float
    layout: canvas_layout.Canvas
    start: torch.LongTensor | None  # the next pass's starting canvas; None: all noise
    processors: list
    denoise: DenoiseSettings
    grow_to: int | None  # the size a short first gap grows to; None: it starts at its full size
    chosen: SlotLogprobs
    passes: PassLog = field(default_factory=PassLog)
    step: int = 0  # counted over every pass: a Draft's step never goes back
    entropy: float = 0.0
    last: Step | None = None  # the last pass's last step
    line_ended: bool = False  # the last pass stopped at the end of the wanted line
    tokens: list[int] = field(default_factory=list)  # the last checked insertion
    text: str = ""

    @property
    def gap(self) -> range:
        return self.layout.gaps[0]


class InfillEngine:
    """Completions on a checkpoint trained on the clamped canvas (see diffusion_infill.engine.completion.canvas)."""

    def __init__(self, loaded: LoadedModel, settings: EngineSettings | None = None):
        if problem := loaded.canvas_problem:
            raise ValueError(f"{problem}; use diffusion_infill.engine.completion.instruct")
        self.loaded = loaded
        settings = settings or EngineSettings()
        # the settings left to the checkpoint: its sampler.json (diffusion_infill.bench.passes --tune)
        self.settings = replace(settings, denoise=settings.denoise.for_checkpoint(loaded.source))
        self.prefix_cache = PrefixCache()
        self.calibration = Calibration.load(loaded.source)  # None: completions get no confidence estimate
        self.revision = judge.load_calibration(loaded.source)  # None: no copied lines to judge

    def complete(
        self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False, start_text: str | None = None
    ) -> Iterator[Draft]:
        """Yields a Draft after every denoising step; the last one is final and closure-valid.

        `start_text` warm-starts the gap (the caller's: the rest of a completion typed along,
        diffusion_infill.lsp.completion.without_run.rest); None: a cold start. Nothing is kept between calls but
        the prefix's KV cache. Returns without a final draft when `cancelled()` turns true.
        """
        one_line = not self.settings.multi_line(request.prefix)
        if start_text is None and one_line and (copied := self._copied_line(request)) is not None:
            yield copied
            return
        run = self._begin(request, one_line, start_text)
        # Every pass ends with a look at `cancelled`: a cancelled completion gets no final draft.
        if not (yield from self._denoise(run, cancelled)):
            return
        # Growing comes first and once: a repair re-noises slots of the canvas it has.
        if self._grow(run) and not (yield from self._denoise(run, cancelled)):
            return
        report = self._check(run)
        for _ in range(self.settings.repair_rounds):
            if report.valid:
                break
            self._renoise(run, report.first_bad_offset())
            if not (yield from self._denoise(run, cancelled)):
                return
            report = self._check(run)
        yield self._answer(run, report)

    def _copied_line(self, request: InfillRequest) -> Draft | None:
        """The best line copied from the code as the model judges it, when its estimate clears the
        revision calibration's threshold and it keeps closure; None otherwise (or without that calibration)."""
        if self.revision is None or not (self.settings.document_drafts and request.document_drafts):
            return None
        candidates = copied_lines.candidates(request, request.others)
        best = judge.best(self, request, candidates)
        if best is None:
            return None
        chance, judged = best
        if chance < self.revision.threshold:
            return None
        if not syntax_check.check(request.prefix, judged.text, request.suffix, request.language).valid:
            return None
        return Draft(judged.text, 1, 0.0, final=True, valid=True, confidence=chance, source=REVISED)

    def _begin(self, request: InfillRequest, one_line: bool, start_text: str | None) -> _Completion:
        """The prefix encoded (its cache reused where it can be) and the first canvas laid out."""
        spec, ids = self.loaded.spec, self.loaded.ids
        context = encode_for(self.loaded, request.prefix, request.suffix)
        started = time.perf_counter()
        cache = self.prefix_cache.encode(self.loaded.model, context.prefix_ids)
        prefill_ms = (time.perf_counter() - started) * 1000
        slots = self.settings.max_gap_tokens or spec.gap_slots
        first = self.settings.first_gap_tokens
        # A warm start is the rest of a suggestion the user typed along: it gets every slot.
        grow_to, slots = (slots, first) if first and first < slots and not start_text else (None, slots)
        layout = canvas_layout.completion_canvas(context.suffix_ids, slots, spec.suffix_head, ids)
        gap = layout.gaps[0]
        return _Completion(
            request,
            one_line,
            context,
            cache,
            prefill_ms,
            layout,
            self._warm_start(layout, context, start_text),
            self._processors(context, gap),
            self.settings.denoise,
            grow_to,
            SlotLogprobs(gap),
        )

    def _denoise(self, run: _Completion, cancelled: Callable[[], bool]) -> Generator[Draft, None, bool]:
        """One pass of the sampler over the current canvas, a Draft per step, stopping early when a
        wanted single line has ended. False: cancelled, or the pass took no step (nothing to answer)."""
        run.last, run.line_ended = None, False
        ids, noise = self.loaded.ids, self.loaded.spec.noise
        for last in denoise(
            self.loaded.model,
            run.cache,
            run.layout,
            ids,
            run.denoise,
            noise=noise,
            start=run.start,
            processors=run.processors,
            cancelled=cancelled,
        ):
            run.last, run.step, run.entropy = last, run.step + 1, float(last.mean_entropy[0])
            run.chosen.observe(last.logits[0], last.argmax[0], last.live[0])
            run.passes.observe(last, run.gap, ids.end)
            shown = canvas_layout.shown(last.current[0].tolist(), last.argmax[0].tolist(), run.gap, ids, noise)
            text = insertion_text(self.loaded.tokenizer, shown, run.context.healed, run.one_line)
            yield Draft(text, run.step, run.entropy, final=False, prefill_ms=run.prefill_ms)
            run.line_ended = self._line_ended(run, shown)
            if run.line_ended:
                break
        return not cancelled() and run.last is not None

    def _grow(self, run: _Completion) -> bool:
        """When the short first gap filled without END, the trained size, its first slots holding
        what was written, ready for one more pass. False: nothing to grow."""
        argmax, gap = run.last.argmax, run.gap
        if not run.grow_to or run.line_ended or self.loaded.ids.end in argmax[0, gap.start : gap.stop]:
            return False
        spec = self.loaded.spec
        run.layout = canvas_layout.completion_canvas(
            run.context.suffix_ids, run.grow_to, spec.suffix_head, self.loaded.ids
        )
        run.start = torch.tensor([run.layout.tokens], device=argmax.device)
        run.start[0, gap.start : gap.stop] = argmax[0, gap.start : gap.stop]
        # The grown gap still starts at the canvas's first slot: its processors stay as they are.
        run.chosen.grow(run.gap)
        return True

    def _check(self, run: _Completion) -> syntax_check.ClosureReport:
        """The last pass's insertion and whether it keeps closure. Slots still masked at the step
        limit take their argmax: a guess, but the best one."""
        run.tokens = canvas_layout.insertion(run.last.argmax[0].tolist(), run.gap, self.loaded.ids)
        run.text = insertion_text(self.loaded.tokenizer, run.tokens, run.context.healed, run.one_line)
        return syntax_check.check(run.request.prefix, run.text, run.request.suffix, run.request.language)

    def _renoise(self, run: _Completion, bad_offset: int | None) -> None:
        """The draft re-noised from the slot that breaks closure, for a shorter pass on this canvas."""
        run.start = self._renoise_from(run.last.argmax, run.layout, run.context, bad_offset)
        run.denoise = self.settings.repair_settings()

    def _answer(self, run: _Completion, report: syntax_check.ClosureReport) -> Draft:
        """The final draft: the insertion when it keeps closure, else its longest valid prefix, with
        its evidence and (when the checkpoint is calibrated) its confidence."""
        cut = not report.valid
        if cut:
            text = longest_valid(self.loaded.tokenizer, run.tokens, run.context.healed, run.one_line, run.request)
        else:
            text = run.text
        logprobs = run.chosen.first(len(run.tokens) + 1)  # the insertion's tokens and its END
        found, confidence = assess(self.calibration, logprobs, text, run.request.prefix, cut)
        return Draft(
            text,
            run.step,
            run.entropy,
            final=True,
            valid=True,
            prefill_ms=run.prefill_ms,
            confidence=confidence,
            evidence=found,
            passes=run.passes.counts(),
        )

    # The pieces the rounds share, in the order they first come up.

    def _processors(self, context: EncodedContext, gap: range) -> list:
        """Token healing on the first slot, and a minimum length (the healed token does not count)."""
        processors = []
        minimum = self.settings.min_insertion_tokens
        if context.healed:
            allowed = healing_candidates(self.loaded.tokenizer, context.healed)
            processors.append(SlotVocabulary(gap.start, torch.tensor(allowed, device=self.loaded.device)))
            minimum += 1
        if minimum:
            processors.append(SlotBan(range(gap.start, gap.start + minimum), self.loaded.ids.end))
        return processors

    def _warm_start(self, layout, context: EncodedContext, start_text: str | None):
        if not start_text:
            return None
        tokens = self.loaded.tokenizer.encode(context.healed + start_text, add_special_tokens=False)
        gap = layout.gaps[0]
        if len(tokens) >= len(gap):
            return None
        start = torch.tensor([layout.tokens], device=self.loaded.device)
        start[0, gap.start : gap.start + len(tokens) + 1] = torch.tensor(tokens + [self.loaded.ids.end])
        return start

    def _line_ended(self, run: _Completion, shown: list[int]) -> bool:
        """One line wanted and, with mask noise, the draft's settled tokens already hold its end: the
        line cannot change any more (settings.stop_at_line_end)."""
        if not (run.one_line and self.settings.stop_at_line_end and self.loaded.spec.noise == "mask"):
            return False
        text = self.loaded.tokenizer.decode(shown)
        healed = run.context.healed
        return text.startswith(healed) and "\n" in text[len(healed) :]

    def _renoise_from(self, argmax: torch.LongTensor, layout, context: EncodedContext, bad_offset: int | None):
        """The draft with every slot from the one holding `bad_offset` onward noised again, with the
        checkpoint's own kind of noise."""
        gap, ids = layout.gaps[0], self.loaded.ids
        start = argmax.clone()
        keep, length = gap.start, -len(context.healed)
        tokenizer = self.loaded.tokenizer
        for position in gap:
            token = int(argmax[0, position])
            if token == ids.end:
                break
            length += len(tokenizer.decode([token]))
            if bad_offset is not None and length > bad_offset:
                break
            keep = position + 1
        if self.loaded.spec.noise == "mask":
            start[0, keep : gap.stop] = ids.mask
        else:  # a uniform-noise checkpoint never saw the mask token: its noise is random tokens
            vocab = self.loaded.model.config.text_config.vocab_size
            start[0, keep : gap.stop] = torch.randint(0, vocab, (gap.stop - keep,), device=start.device)
        return start
