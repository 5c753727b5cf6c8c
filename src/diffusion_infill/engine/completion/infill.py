"""One inline completion: text around the cursor in, converging drafts out.

prefix -> encoder (KV cache, reused when the next prefix extends this one) -> canvas of
gap slots + clamped suffix head -> denoising steps (a Draft each) -> closure check ->
repair by re-noising the offending slots, or truncation to the longest valid prefix.
The canvas starts with a short gap (a cheaper step) and grows to the trained size only
when the model fills it without END.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

import torch
from transformers.cache_utils import DynamicCache

from diffusion_infill.engine import closure
from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion import judge, line_drafts
from diffusion_infill.engine.completion.confidence import Calibration, SlotLogprobs, assess
from diffusion_infill.engine.completion.insertion import insertion_text, longest_valid
from diffusion_infill.engine.completion.prefix import EncodedContext, encode_context, healing_candidates
from diffusion_infill.engine.completion.sampler import PassCounts, PassLog, SlotBan, SlotVocabulary, Step, denoise
from diffusion_infill.engine.drafts import REVISED, Draft, InfillRequest
from diffusion_infill.engine.loading import LoadedModel
from diffusion_infill.engine.settings import EngineSettings


class PrefixCache:
    """The encoder KV cache of the last prefix, cropped and extended instead of recomputed."""

    def __init__(self):
        self.ids: list[int] = []
        self.cache: DynamicCache | None = None
        self.reused_tokens = 0  # of the last call, for benchmarks and tests

    def encode(self, model, ids: list[int]) -> DynamicCache:
        common = 0
        for old, new in zip(self.ids, ids, strict=False):
            if old != new:
                break
            common += 1
        if self.cache is None or common == 0:
            self.cache, common = DynamicCache(config=model.config.text_config), 0
        elif common < len(self.ids):
            self.cache.crop(common - len(self.ids))  # transformers 5: a negative count of tokens to drop
        if common < len(ids):
            tail = torch.tensor([ids[common:]], device=model.device)
            try:
                with torch.no_grad():
                    model.model.encoder(input_ids=tail, cache=self.cache)
            except BaseException:
                # Cropped, or extended in some layers and not others (out of memory midway):
                # the cache matches no prefix any more, so the next call starts from nothing.
                self.ids, self.cache = [], None
                raise
        self.ids, self.reused_tokens = list(ids), common
        return self.cache


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
        self.revision = judge.load_calibration(loaded.source)  # None: no line drafts to judge

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

    def complete(self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False,
                 start_text: str | None = None) -> Iterator[Draft]:
        """Yields a Draft after every denoising step; the last one is final and closure-valid.

        `start_text` warm-starts the gap (the caller's: the rest of a completion typed along,
        diffusion_infill.engine.completion.typed_along); None: a cold start. Nothing is kept between calls but
        the prefix's KV cache. Returns without a final draft when `cancelled()` turns true.

        A single-line request first has the model judge lines copied from the code
        (engine.completion.line_drafts); the best one is the answer when its calibrated estimate
        clears the revision calibration's threshold, and denoising starts otherwise.
        """
        if start_text is None and (judged := self.judged_draft(request)) is not None:
            yield judged
            return
        spec, ids, model = self.loaded.spec, self.loaded.ids, self.loaded.model
        context = encode_context(self.loaded.tokenizer, ids.bos, request.prefix, request.suffix,
                                 spec.max_prefix, spec.suffix_head, context_tokens=spec.context_tokens)
        started = time.perf_counter()
        cache = self.prefix_cache.encode(model, context.prefix_ids)
        prefill_ms = (time.perf_counter() - started) * 1000
        slots = self.settings.max_gap_tokens or spec.gap_slots
        first = self.settings.first_gap_tokens
        # A warm start is the rest of a suggestion the user typed along: it gets every slot.
        grow_to, slots = (slots, first) if first and first < slots and not start_text else (None, slots)
        layout = canvas_layout.completion_canvas(context.suffix_ids, slots, spec.suffix_head, ids)
        gap = layout.gaps[0]
        start = self._warm_start(layout, context, start_text)
        processors = self._processors(context, gap)

        step, entropy, repairs = 0, 0.0, 0
        chosen, passes = SlotLogprobs(gap), PassLog()
        denoise_settings = self.settings.denoise
        while True:
            last: Step | None = None
            line_ended = False
            for last in denoise(model, cache, layout, ids, denoise_settings, noise=spec.noise,
                                start=start, processors=processors, cancelled=cancelled):
                step, entropy = step + 1, float(last.mean_entropy[0])
                chosen.observe(last.logits[0], last.argmax[0], last.live[0])
                passes.observe(last, gap, ids.end)
                shown = self._draft_tokens(last, gap)
                yield Draft(self._text(shown, context, request), step, entropy, final=False, prefill_ms=prefill_ms)
                if line_ended := self._line_ended(shown, context, request):
                    break
            if cancelled() or last is None:
                return
            if grow_to and not line_ended and ids.end not in last.argmax[0, gap.start : gap.stop]:
                # The gap filled without END: the trained size, its first slots holding what was written.
                layout = canvas_layout.completion_canvas(context.suffix_ids, grow_to, spec.suffix_head, ids)
                start = torch.tensor([layout.tokens], device=last.argmax.device)
                start[0, gap.start : gap.stop] = last.argmax[0, gap.start : gap.stop]
                gap, grow_to = layout.gaps[0], None
                processors = self._processors(context, gap)
                chosen.grow(gap)
                continue
            # Slots still masked at the step limit take their argmax: a guess, but the best one.
            tokens = canvas_layout.insertion(last.argmax[0].tolist(), gap, ids)
            text = self._text(tokens, context, request)
            report = closure.check(request.prefix, text, request.suffix, request.language)
            if report.valid:
                yield self._final(text, chosen.first(len(tokens) + 1), request, False, step, entropy, prefill_ms,
                                  passes.counts())
                return
            if repairs == self.settings.repair_rounds:
                break
            repairs += 1
            grow_to = None  # a repair re-noises slots of this canvas; it never grows
            start = self._renoise_from(last.argmax, layout, context, report.first_bad_offset())
            denoise_settings = self.settings.repair_settings()
        text = longest_valid(self.loaded.tokenizer, tokens, context.healed, self.settings, request)
        yield self._final(text, chosen.first(len(tokens) + 1), request, True, step, entropy, prefill_ms,
                          passes.counts())

    def judged_draft(self, request: InfillRequest) -> Draft | None:
        """The best line copied from the code as the model judges it, when its estimate clears the
        threshold and it keeps closure; None otherwise (or without a revision calibration)."""
        if self.revision is None or not (self.settings.line_drafts and request.copied_lines) \
                or self.settings.multi_line(request.prefix):
            return None
        candidates = line_drafts.candidates(request, request.others)
        if not candidates:
            return None
        judged = judge.judge(self, request, candidates)
        chances = [(self.revision.chance(judge.features(j, request.prefix)), j) for j in judged]
        if not chances:
            return None
        chance, best = max(chances, key=lambda pair: pair[0])
        if chance < self.revision.threshold:
            return None
        if not closure.check(request.prefix, best.text, request.suffix, request.language).valid:
            return None
        return Draft(best.text, 1, 0.0, final=True, valid=True, confidence=chance, source=REVISED)

    def _final(self, text: str, logprobs: list[float], request: InfillRequest, cut: bool, step: int,
               entropy: float, prefill_ms: float, passes: PassCounts) -> Draft:
        """The final draft, with its evidence and (when the checkpoint is calibrated) its confidence."""
        found, confidence = assess(self.calibration, logprobs, text, request.prefix, cut)
        return Draft(text, step, entropy, final=True, valid=True, prefill_ms=prefill_ms, confidence=confidence,
                     evidence=found, passes=passes)

    def _line_ended(self, shown: list[int], context: EncodedContext, request: InfillRequest) -> bool:
        """One line wanted and, with mask noise, the draft's settled tokens already hold its end: the
        line cannot change any more (settings.stop_at_line_end)."""
        if not self.settings.stop_at_line_end or self.loaded.spec.noise != "mask" \
                or self.settings.multi_line(request.prefix):
            return False
        text = self.loaded.tokenizer.decode(shown)
        return text.startswith(context.healed) and "\n" in text[len(context.healed):]

    def _draft_tokens(self, step: Step, gap: range) -> list[int]:
        """What a draft shows: with mask noise only the revealed slots up to the first masked one,
        which later steps keep; with uniform noise the argmax, which they refine."""
        if self.loaded.spec.noise == "mask":
            return canvas_layout.settled(step.current[0].tolist(), gap, self.loaded.ids)
        return canvas_layout.insertion(step.argmax[0].tolist(), gap, self.loaded.ids)

    def _text(self, tokens: list[int], context: EncodedContext, request: InfillRequest) -> str:
        return insertion_text(self.loaded.tokenizer, tokens, context.healed, self.settings, request.prefix)

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
