"""The denoising loop: transformers' sampler, temperature schedule and early stopping,
applied to a canvas with clamped slots.

It follows the inner loop of `DiffusionGemmaForBlockDiffusion.generate` (entropy-bound
acceptance, arXiv:2505.24857; self-conditioning on the previous step's logits) with
differences that the clamped canvas needs: known slots are pinned to their token,
slots past a gap's END stay noise, and every step is yielded so callers can stream
drafts, check closure or cancel without copying the loop.

With mask noise a slot once revealed keeps its token (as in LLaDA and MaskGIT), and the
entropy bound decides how many masked slots each step reveals; the loop ends when none
is left. transformers' sampler re-decides every slot at every step, which suits
DiffusionGemma's uniform noise, where the model is trained to predict every slot; a
mask-noise model is trained on the masked slots alone, so what it predicts for a
revealed slot is untrained, and re-deciding those slots undid what earlier steps (and a
warm start) had settled. The model may still end the insertion before a revealed slot
(keeping END out of those slots cost 2 more passes a completion for no measured gain).
On the embedded model, 30 tuning cases (not the benchmark's): 5.6 forward passes instead
of 17.5, edit similarity 0.15 instead of 0.10, and typing along a suggestion keeps it in
20 of 21 cases instead of 1 of 14.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    EntropyBoundSampler,
    EntropyBoundSamplerConfig,
    LinearTemperatureScheduleLogitsProcessor,
    StableAndConfidentStoppingCriteria,
)

from engine.canvas import Canvas
from engine.tokens import SpecialIds

PINNED = 1e4  # logit that makes a slot's distribution one-hot: zero entropy, always accepted


@dataclass(frozen=True)
class DenoiseSettings:
    max_steps: int = 24  # upper bound on decoder forward passes
    entropy_bound: float = 0.5  # summed entropy of the tokens accepted per step
    t_min: float = 0.4  # temperature at the last step
    t_max: float = 0.8  # temperature at the first step
    stability_threshold: int = 1  # steps the argmax must stay unchanged to stop
    # Mean entropy (nats per live slot) under which a stable canvas stops before every slot
    # is revealed; what ends a mask-noise loop is usually the last masked slot revealed.
    confidence_threshold: float = 0.05


@dataclass
class Step:
    step: int  # 1-based count of decoder forward passes so far
    argmax: torch.LongTensor  # (batch, canvas) the draft: best token per slot
    current: torch.LongTensor  # (batch, canvas) accepted tokens, the rest re-noised
    logits: torch.Tensor  # (batch, canvas, vocab) processed logits, next self-conditioning
    mean_entropy: torch.Tensor  # (batch,) over the live slots: gap slots up to their END
    finished: torch.BoolTensor  # (batch,) stopped early by the stopping criteria


class MaskingSampler(EntropyBoundSampler):
    """Entropy-bound acceptance with absorbing noise: re-noising writes the mask token."""

    def __init__(self, config: EntropyBoundSamplerConfig, canvas_length: int, vocab_size: int, mask_id: int):
        super().__init__(config, canvas_length, vocab_size, max_denoising_steps=0)
        self.mask_id = mask_id

    def initialize_canvas(self, batch_size: int, device: torch.device) -> torch.LongTensor:
        return torch.full((batch_size, self.canvas_length), self.mask_id, dtype=torch.long, device=device)


class SlotVocabulary(LogitsProcessor):
    """Restricts one slot to a set of tokens (token healing: the word under the cursor)."""

    def __init__(self, slot: int, allowed: torch.LongTensor):
        self.slot = slot
        self.allowed = allowed

    def __call__(self, input_ids, scores: torch.Tensor, cur_step: int) -> torch.Tensor:
        blocked = torch.full_like(scores[:, self.slot], float("-inf"))
        blocked[:, self.allowed] = 0.0
        scores = scores.clone()
        scores[:, self.slot] += blocked
        return scores


class SlotBan(LogitsProcessor):
    """Keeps one token out of some slots: END out of the first gap slots makes the insertion
    at least that long (like `MinNewTokensLengthLogitsProcessor` for left-to-right models)."""

    def __init__(self, slots: range, token: int):
        self.slots = slots
        self.token = token

    def __call__(self, input_ids, scores: torch.Tensor, cur_step: int) -> torch.Tensor:
        scores = scores.clone()
        scores[:, self.slots.start : self.slots.stop, self.token] = float("-inf")
        return scores


def make_sampler(noise: str, settings: DenoiseSettings, length: int, vocab: int, mask_id: int):
    config = EntropyBoundSamplerConfig(entropy_bound=float(settings.entropy_bound))
    if noise == "mask":
        return MaskingSampler(config, length, vocab, mask_id)
    return EntropyBoundSampler(config, length, vocab, settings.max_steps)


def pin(logits: torch.Tensor, positions: torch.BoolTensor, tokens: torch.LongTensor) -> torch.Tensor:
    """One-hot logits at `positions` on `tokens`: such slots neither spend entropy nor change."""
    pinned = torch.full_like(logits, -PINNED)
    pinned.scatter_(-1, tokens.unsqueeze(-1), PINNED)
    return torch.where(positions.unsqueeze(-1), pinned, logits)


def _past_end(tokens: torch.LongTensor, gap_mask: torch.BoolTensor, gap_ids: torch.LongTensor, end_id: int):
    """Slots after the first END inside their own gap."""
    is_end = (tokens == end_id) & gap_mask
    past = torch.zeros_like(gap_mask)
    for gap in gap_ids.unique():
        if gap < 0:
            continue
        in_gap = gap_ids == gap
        seen = torch.cumsum((is_end & in_gap).int(), dim=-1)
        past |= in_gap & (seen > 0) & ~(is_end & (seen == 1))
    return past


def _sample(logits: torch.Tensor, argmax: torch.LongTensor, live: torch.BoolTensor,
            generator: torch.Generator | None) -> torch.LongTensor:
    """A token drawn for each live slot; pinned slots are one-hot, so theirs is the argmax.
    Most slots are pinned once the model has placed END: drawing only the live ones saves
    the softmax and the draw over the whole vocabulary for each of them."""
    sampled = argmax.clone()
    if live.any():
        probs = torch.softmax(logits[live], dim=-1, dtype=torch.float32)
        sampled[live] = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
    return sampled


def _entropy(logits: torch.Tensor, live: torch.BoolTensor) -> torch.Tensor:
    """Per-slot entropy (rows, canvas), zero for pinned slots, computed for the live ones only."""
    entropy = torch.zeros(live.shape, dtype=torch.float32, device=logits.device)
    if live.any():
        entropy[live] = torch.distributions.Categorical(logits=logits[live].float()).entropy()
    return entropy


@torch.no_grad()
def denoise(
    model,
    cache,
    canvas: Canvas,
    ids: SpecialIds,
    settings: DenoiseSettings,
    *,
    noise: str = "mask",
    batch: torch.LongTensor | None = None,
    start: torch.LongTensor | None = None,
    processors: list[LogitsProcessor] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
    generator: torch.Generator | None = None,
) -> Iterator[Step]:
    """Denoises the gap slots of `canvas` (or of `batch`, rows laid out like it), one Step a pass.

    `start` warm-starts the gap slots (e.g. from the previous draft); the cache holds the
    encoded prefix, one row per canvas row (`Cache.batch_repeat_interleave` on a copy for a
    batch), and is only read. Stops at `max_steps`, at early stopping, or as soon as
    `cancelled()` is true between two steps.
    """
    device = model.device
    known_tokens = batch if batch is not None else torch.tensor([canvas.tokens], device=device)
    rows, length = known_tokens.shape
    known = torch.tensor(canvas.known, device=device).expand(rows, length)
    gap_ids = torch.full((length,), -1, dtype=torch.long, device=device)
    for index, gap in enumerate(canvas.gaps):
        gap_ids[gap.start : gap.stop] = index
    gap_mask = (gap_ids >= 0).expand(rows, length)
    gap_ids = gap_ids.expand(rows, length)
    vocab = model.config.text_config.vocab_size

    sampler = make_sampler(noise, settings, length, vocab, ids.mask)
    stopping = StableAndConfidentStoppingCriteria(settings.stability_threshold, settings.confidence_threshold)
    logits_processor = LogitsProcessorList(processors or [])
    schedule = LinearTemperatureScheduleLogitsProcessor(settings.t_min, settings.t_max, settings.max_steps)
    logits_processor.append(schedule)

    banned = torch.tensor([ids.mask, ids.pad, ids.bos], device=device)
    noise_canvas = sampler.initialize_canvas(rows, device)
    current = torch.where(known, known_tokens, start if start is not None else noise_canvas)
    self_conditioning = None
    positions = torch.arange(cache.get_seq_length(), cache.get_seq_length() + length, device=device).unsqueeze(0)

    for done, cur_step in enumerate(reversed(range(1, settings.max_steps + 1)), start=1):
        if cancelled():
            return
        raw = model(
            decoder_input_ids=current,
            cache=cache,
            self_conditioning_logits=self_conditioning,
            decoder_position_ids=positions,
        ).logits
        logits = logits_processor(None, raw, cur_step=cur_step)
        logits[..., banned] = float("-inf")  # structural tokens never fill a slot
        revealed = (current != ids.mask) & ~known if noise == "mask" else torch.zeros_like(known)
        argmax = torch.where(known, known_tokens, logits.argmax(dim=-1))
        argmax = torch.where(revealed, current, argmax)
        unused = _past_end(argmax, gap_mask, gap_ids, ids.end)
        argmax = torch.where(unused, ids.mask, argmax)
        conditioning = pin(logits, known | unused, argmax)  # as in training, where revealed slots are not pinned
        revealed = revealed & ~unused
        logits = pin(logits, known | unused | revealed, argmax)

        live = ~(known | unused | revealed)
        sampled = _sample(logits, argmax, live, generator)
        accepted = sampler.accept_canvas(current, sampled, logits, cur_step)
        current = sampler.renoise_canvas(accepted, cur_step)
        current = torch.where(known, known_tokens, current)
        current = torch.where(_past_end(current, gap_mask, gap_ids, ids.end), noise_canvas, current)

        # The criteria average entropy over the whole canvas, where pinned slots count as zero:
        # scale the threshold so that it applies to the mean over the live gap slots alone.
        live_count = live.sum(dim=-1).clamp(min=1)
        stopping.confidence_threshold = settings.confidence_threshold * live_count / length
        finished = stopping(argmax, logits)
        if noise == "mask":  # the draft is what the canvas now holds; done when no live slot is masked
            after_end = _past_end(current, gap_mask, gap_ids, ids.end)
            argmax = torch.where(gap_mask & (current != ids.mask) & ~after_end, current, argmax)
            finished = finished | ~(gap_mask & (current == ids.mask) & ~after_end).any(dim=-1)
        entropy = _entropy(logits, live).sum(dim=-1) / live_count
        self_conditioning = conditioning.to(model.dtype)
        yield Step(done, argmax, current, logits, entropy, finished)
        if finished.all():
            return
