"""Diffusion repair of a selection: damaged spans become gaps on one multi-gap canvas.

The text before the selection is encoded once into the KV cache (reused across calls
like a completion's prefix); the selection is laid out as known, clamped token segments
with a gap in place of every damaged span, followed by the head of the text after the
selection. A gap gets the span's own token count plus extra slots, so the model can
insert; it closes each gap with END, so it can also delete. Several samples are
denoised as one batch. "Regenerate" is the same with the whole selection as one gap.
Special tokens (END, EOS, MASK ...) never reach a candidate: a gap's text is decoded
from its ordinary tokens only. The candidates come back as plain text: whether any is
valid is the caller's question.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch

from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.prefix import encode_for
from diffusion_infill.engine.completion.prefix_cache import PrefixCache
from diffusion_infill.engine.completion.sampler import DenoiseSettings, denoise
from diffusion_infill.engine.loading import LoadedModel
from diffusion_infill.engine.repair.spans import Span, merge
from diffusion_infill.engine.tokens import never_written_texts


@dataclass(frozen=True)
class RepairSettings:
    extra_slots: int = 4  # slots beyond a span's own tokens: room for what is missing there
    samples: int = 2  # canvas rows denoised together; each is one candidate
    max_gaps: int = 8  # more damaged spans than this are merged from the nearest ones on
    max_canvas: int = 512  # tokens; a selection that needs a longer canvas gets no diffusion candidate
    seed: int = 0  # sampling seed: the same selection gets the same candidates
    renoise: float = 0.5  # regenerate: share of the selection's tokens noised before the first step
    denoise: DenoiseSettings = field(default_factory=lambda: DenoiseSettings(max_steps=12))


class DiffusionRepairer:
    """Fills damaged spans of a selection on a checkpoint trained on the clamped canvas."""

    def __init__(self, loaded: LoadedModel, settings: RepairSettings | None = None):
        if problem := loaded.canvas_problem:
            raise ValueError(problem)
        self.loaded = loaded
        self.settings = settings or RepairSettings()
        self.prefix_cache = PrefixCache()
        self.special_texts = never_written_texts(loaded.tokenizer)  # what engine.repair.fixes keeps out

    def _encode(self, text: str) -> list[int]:
        return self.loaded.tokenizer.encode(text, add_special_tokens=False) if text else []

    def fill(self, before: str, text: str, spans: list[Span], after: str, renoise: float | None = None) -> list[str]:
        """Candidates: `text` with every span replaced by what the model writes there (one per sample).

        With `renoise`, each gap starts from its span's own tokens with that share of them
        noised (and END after them), instead of from pure noise: the first step sees the
        old text through the noise, as in re-noising a draft.
        """
        spec, ids, model = self.loaded.spec, self.loaded.ids, self.loaded.model
        spans = merge([Span(max(0, s.start), min(len(text), s.end)) for s in spans], self.settings.max_gaps)
        if not spans:
            return []
        segments: list[list[int] | int] = []
        known_texts: list[str] = []
        cursor = 0
        for span in spans:
            known_texts.append(text[cursor : span.start])
            segments.append(self._encode(text[cursor : span.start]))
            segments.append(len(self._encode(text[span.start : span.end])) + self.settings.extra_slots)
            cursor = span.end
        known_texts.append(text[cursor:])
        segments.append(self._encode(text[cursor:]))
        context = encode_for(self.loaded, before, after, heal=False)
        segments.append(canvas_layout.suffix_head(context.suffix_ids, spec.suffix_head, ids))
        layout = canvas_layout.build(segments, ids.mask)
        if len(layout) > self.settings.max_canvas:
            return []

        rows = self.settings.samples
        cache = copy.deepcopy(self.prefix_cache.encode(model, context.prefix_ids))  # denoise reads one row per sample
        cache.batch_repeat_interleave(rows)
        batch = torch.tensor([layout.tokens] * rows, device=model.device)
        generator = torch.Generator(device=model.device).manual_seed(self.settings.seed)
        start = None
        if renoise is not None and spec.noise == "mask":  # uniform-noise checkpoints start from random tokens
            start = self._renoised(batch, layout, [text[s.start : s.end] for s in spans], renoise, generator)
        last = None
        for step in denoise(
            model,
            cache,
            layout,
            ids,
            self.settings.denoise,
            noise=spec.noise,
            batch=batch,
            start=start,
            generator=generator,
        ):
            last = step  # only the converged canvas is a candidate
        if last is None:
            return []
        candidates = []
        for row in last.argmax.tolist():
            pieces = [known_texts[0]]
            for gap, known in zip(layout.gaps, known_texts[1:], strict=True):
                written = [token for token in canvas_layout.insertion(row, gap, ids) if token not in ids.unwritten]
                pieces.append(self.loaded.tokenizer.decode(written))
                pieces.append(known)
            candidates.append("".join(pieces))
        return candidates

    def _renoised(
        self, batch: torch.LongTensor, layout, olds: list[str], share: float, generator: torch.Generator
    ) -> torch.LongTensor:
        """Gap slots holding the old text with `share` of its tokens masked, END after it."""
        ids, start = self.loaded.ids, batch.clone()
        for gap, old in zip(layout.gaps, olds, strict=True):
            tokens = torch.tensor(self._encode(old) + [ids.end], device=batch.device)[: len(gap)]
            slots = slice(gap.start, gap.start + len(tokens))
            noised = torch.rand((batch.shape[0], len(tokens)), generator=generator, device=batch.device) < share
            start[:, slots] = torch.where(noised, ids.mask, tokens.expand(batch.shape[0], -1))
        return start

    def regenerate(self, before: str, text: str, after: str) -> list[str]:
        """The selection re-noised and denoised with the surroundings as context."""
        return self.fill(before, text, [Span(0, len(text))], after, renoise=self.settings.renoise)
