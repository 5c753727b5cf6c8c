"""The denoising loop: transformers' entropy-bound sampler, temperature schedule and early
stopping, applied to a canvas with clamped slots.

It follows the inner loop of `DiffusionGemmaForBlockDiffusion.generate` (entropy-bound
acceptance, arXiv:2505.24857; self-conditioning on the previous step's logits) with
differences that the clamped canvas needs: known slots are pinned to their token,
slots past a gap's END stay noise, and every step is yielded so callers can stream
drafts, check closure or cancel without copying the loop. The acceptance rule and the
stopping criteria are transformers' (`EntropyBoundSampler`, `StableAndConfidentStoppingCriteria`),
computed from one entropy per live slot instead of three over the whole canvas.

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

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.models.diffusion_gemma.generation_diffusion_gemma import LinearTemperatureScheduleLogitsProcessor

from engine.completion.canvas import Canvas
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
    # lm_head and entropy on the slots that need them only (same tokens); False: on the whole canvas
    live_logits: bool = True


@dataclass
class Step:
    step: int  # 1-based count of decoder forward passes so far
    argmax: torch.LongTensor  # (batch, canvas) the draft: best token per slot
    current: torch.LongTensor  # (batch, canvas) accepted tokens, the rest re-noised
    logits: torch.Tensor  # (batch, canvas, vocab) processed logits, next self-conditioning
    mean_entropy: torch.Tensor  # (batch,) over the live slots: gap slots up to their END
    finished: torch.BoolTensor  # (batch,) stopped early by the stopping criteria


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


def pin(logits: torch.Tensor, positions: torch.BoolTensor, tokens: torch.LongTensor) -> torch.Tensor:
    """One-hot logits at `positions` on `tokens`: such slots neither spend entropy nor change."""
    pinned = torch.full_like(logits, -PINNED)
    pinned.scatter_(-1, tokens.unsqueeze(-1), PINNED)
    return torch.where(positions.unsqueeze(-1), pinned, logits)


def softcapped_logits(model, hidden: torch.Tensor) -> torch.Tensor:
    """The lm_head and final soft-capping of `DiffusionGemmaForBlockDiffusion.forward`, on any rows of
    decoder (or encoder) hidden states."""
    cap = model.final_logit_softcapping
    return torch.tanh(model.lm_head(hidden).float() / cap) * cap


def _past_end(tokens: torch.LongTensor, gaps: list[range], end_id: int) -> torch.BoolTensor:
    """Slots after the first END inside their own gap."""
    past = torch.zeros(tokens.shape, dtype=torch.bool, device=tokens.device)
    for gap in gaps:
        is_end = tokens[:, gap.start : gap.stop] == end_id
        past[:, gap.start : gap.stop] = torch.cumsum(is_end, dim=-1) > is_end.int()  # an END before the slot
    return past


def _slot_logits(model, hidden: torch.Tensor, scored: torch.BoolTensor | None) -> torch.Tensor:
    """(rows, canvas, vocab) logits; with `scored`, the lm_head runs on those slots only and the
    others hold zeros (they are pinned or dropped before anything reads them)."""
    if scored is None:
        return softcapped_logits(model, hidden)
    logits = torch.zeros((*scored.shape, model.lm_head.out_features), device=hidden.device)
    logits[scored] = softcapped_logits(model, hidden[scored])
    return logits


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


def _entropy(logits: torch.Tensor, live: torch.BoolTensor | None) -> torch.Tensor:
    """Per-slot entropy (rows, canvas): pinned slots are one-hot, so theirs is exactly zero and
    computing it for the live slots alone (`live`) gives the same tensor."""
    if live is None:
        return torch.distributions.Categorical(logits=logits).entropy()
    entropy = torch.zeros(live.shape, dtype=torch.float32, device=logits.device)
    if live.any():
        entropy[live] = torch.distributions.Categorical(logits=logits[live].float()).entropy()
    return entropy


def _accept(entropy: torch.Tensor, bound: float) -> torch.BoolTensor:
    """Entropy-bound acceptance (arXiv:2505.24857), as transformers' `EntropyBoundSampler.accept_canvas`
    computes it from the logits: the k lowest-entropy slots whose summed entropy less the largest
    stays within `bound`. Pinned slots have zero entropy and are always accepted."""
    ordered, order = torch.sort(entropy, dim=-1, descending=False)
    selected = torch.cumsum(ordered, dim=-1) - ordered <= bound
    return torch.scatter(input=torch.zeros_like(selected), dim=-1, index=order, src=selected)


class _Stability:
    """Whether the argmax canvas of each row is the one of the last `steps` steps, as in
    transformers' `StableAndConfidentStoppingCriteria` (0: always stable)."""

    def __init__(self, steps: int):
        self.history: deque[torch.LongTensor] = deque(maxlen=steps)
        self.steps = steps

    def __call__(self, argmax: torch.LongTensor) -> torch.BoolTensor:
        stable = torch.full(argmax.shape[:1], len(self.history) == self.steps, device=argmax.device)
        for earlier in self.history:
            stable &= (earlier == argmax).all(dim=-1)
        self.history.append(argmax)
        return stable


@torch.inference_mode()
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

    With `settings.live_logits` the lm_head runs on the gap slots up to a revealed END only
    (pinned suffix slots and the slots after that END need none) and the entropy on the live
    slots only; the tokens are those of the whole-canvas computation.
    """
    device = model.device
    known_tokens = batch if batch is not None else torch.tensor([canvas.tokens], device=device)
    rows, length = known_tokens.shape
    known = torch.tensor(canvas.known, device=device).expand(rows, length)
    gaps = list(canvas.gaps)
    gap_mask = torch.zeros(length, dtype=torch.bool, device=device)
    for gap in gaps:
        gap_mask[gap.start : gap.stop] = True
    gap_mask = gap_mask.expand(rows, length)
    vocab = model.config.text_config.vocab_size

    stable = _Stability(settings.stability_threshold)
    logits_processor = LogitsProcessorList(processors or [])
    schedule = LinearTemperatureScheduleLogitsProcessor(settings.t_min, settings.t_max, settings.max_steps)
    logits_processor.append(schedule)

    banned = torch.tensor([ids.mask, ids.pad, ids.bos, *ids.unwritten], device=device)
    if noise == "mask":
        noise_canvas = torch.full((rows, length), ids.mask, dtype=torch.long, device=device)
    else:
        noise_canvas = torch.randint(0, vocab, (rows, length), device=device)
    current = torch.where(known, known_tokens, start if start is not None else noise_canvas)
    self_conditioning = None
    positions = torch.arange(cache.get_seq_length(), cache.get_seq_length() + length, device=device).unsqueeze(0)

    for done, cur_step in enumerate(reversed(range(1, settings.max_steps + 1)), start=1):
        if cancelled():
            return
        hidden = model.model.decoder(
            decoder_input_ids=current,
            cache=cache,
            self_conditioning_logits=self_conditioning,
            decoder_position_ids=positions,
        ).last_hidden_state
        scored = None
        if settings.live_logits:  # with uniform noise every gap slot is decided again
            scored = ~known & ~_past_end(current, gaps, ids.end) if noise == "mask" else ~known
        logits = logits_processor(None, _slot_logits(model, hidden, scored), cur_step=cur_step)
        logits[..., banned] = float("-inf")  # structural and special tokens never fill a slot
        revealed = (current != ids.mask) & ~known if noise == "mask" else torch.zeros_like(known)
        argmax = torch.where(known, known_tokens, logits.argmax(dim=-1))
        argmax = torch.where(revealed, current, argmax)
        unused = _past_end(argmax, gaps, ids.end)
        argmax = torch.where(unused, ids.mask, argmax)
        conditioning = pin(logits, known | unused, argmax)  # as in training, where revealed slots are not pinned
        revealed = revealed & ~unused
        logits = pin(logits, known | unused | revealed, argmax)

        live = ~(known | unused | revealed)
        sampled = _sample(logits, argmax, live, generator)
        entropy = _entropy(logits, live if settings.live_logits else None)
        accepted = _accept(entropy, settings.entropy_bound)
        renoised = noise_canvas if noise == "mask" else torch.randint(0, vocab, (rows, length), device=device)
        current = torch.where(accepted, sampled, renoised)
        current = torch.where(known, known_tokens, current)
        current = torch.where(_past_end(current, gaps, ids.end), noise_canvas, current)

        # Early stopping on the mean entropy over the live gap slots (pinned slots count as zero
        # in the mean over the canvas, hence the scaled threshold), once the argmax is stable.
        live_count = live.sum(dim=-1).clamp(min=1)
        finished = stable(argmax) & (entropy.mean(dim=-1) < settings.confidence_threshold * live_count / length)
        if noise == "mask":  # the draft is what the canvas now holds; done when no live slot is masked
            after_end = _past_end(current, gaps, ids.end)
            argmax = torch.where(gap_mask & (current != ids.mask) & ~after_end, current, argmax)
            finished = finished | ~(gap_mask & (current == ids.mask) & ~after_end).any(dim=-1)
        self_conditioning = conditioning.to(model.dtype)
        yield Step(done, argmax, current, logits, entropy.sum(dim=-1) / live_count, finished)
        if finished.all():
            return
