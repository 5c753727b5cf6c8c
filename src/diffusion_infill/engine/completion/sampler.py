"""The denoising loop: transformers' entropy-bound sampler, temperature schedule and early
stopping, applied to a canvas with clamped slots.

It follows the inner loop of `DiffusionGemmaForBlockDiffusion.generate` (entropy-bound
acceptance, arXiv:2505.24857; self-conditioning on the previous step's logits) with
differences that the clamped canvas needs: known slots are pinned to their token,
slots past a gap's END stay noise, and every step is yielded so callers can stream
drafts, check closure or cancel without copying the loop. Each step decides the *live*
slots (gap slots not pinned: not clamped, not past END, and with mask noise not revealed
earlier); the others are *pinned*, one-hot in the logits so they spend no entropy. Both
are carried in each Step, never inferred from logit sizes.

Acceptance is the rule of transformers' `EntropyBoundSampler.accept_canvas`, applied to the
entropy computed once a step on the live slots (the library's entry point would compute it
again from the logits; a test pins the two together), and, where `accept_probability` is
set, also every live slot whose most likely token is at least that likely (Fast-dLLM,
arXiv:2505.22618). The noise kind decides the rest (`MaskNoise`,
`UniformNoise`): with mask noise a revealed slot keeps its token (as in LLaDA and MaskGIT)
and the loop ends when no slot before END is masked; transformers' uniform noise re-decides
every slot at every step, which suits DiffusionGemma, where the model is trained to predict
every slot. A mask-noise model is trained on the masked slots alone, so what it predicts for
a revealed slot is untrained, and re-deciding those slots undid what earlier steps (and a
warm start) had settled. Stopping: transformers' stable-and-confident rule, computed from
the same entropy, its mean over the live slots (pinned to the library by a test too), and,
where `stable_insertion` is set, as soon as the insertion up to END has not changed for that
many steps (where the passes go, and what each rule saves: docs/performance.md).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import groupby

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.models.diffusion_gemma.generation_diffusion_gemma import LinearTemperatureScheduleLogitsProcessor

from diffusion_infill.engine.completion.canvas import Canvas
from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings
from diffusion_infill.engine.tokens import SpecialIds

PINNED = 1e4  # logit that makes a slot's distribution one-hot: zero entropy


@dataclass
class Step:
    step: int  # 1-based count of decoder forward passes so far
    argmax: torch.LongTensor  # (batch, canvas) the draft: best token per slot
    current: torch.LongTensor  # (batch, canvas) accepted tokens, the rest re-noised
    logits: torch.Tensor  # (batch, canvas, vocab) processed logits, pinned slots one-hot
    mean_entropy: torch.Tensor  # (batch,) over the live slots: gap slots up to their END
    finished: torch.BoolTensor  # (batch,) stopped early by the stopping criteria
    live: torch.BoolTensor  # (batch, canvas) slots this step decided; the others are pinned
    accepted: torch.BoolTensor  # (batch, canvas) live slots whose token this step kept
    revealed: torch.LongTensor  # (batch,) accepted slots that hold a token before their gap's END afterwards
    redecided: torch.LongTensor  # (batch,) slots that held a token before this step and hold another after it


@dataclass(frozen=True)
class PassCounts:
    """Where one completion's denoising passes went (the prefix encoding not counted); a pass
    can be in several of these."""

    passes: int = 0
    without_reveal: int = 0  # kept no token before END: the accepted slots fell past an END
    one_token: int = 0  # kept exactly one token before END
    redecided: int = 0  # changed a slot that held a token (uniform noise; a revealed slot cut off by an END)
    after_final: int = 0  # came after the draft's insertion up to END was already the final one
    past_end: int = 0  # accepted slots only past the final insertion's END
    unfinal_run: int = 0  # the longest run of passes with one insertion that was not the final one


class PassLog:
    """Collects a completion's Steps (row 0, one gap) into PassCounts."""

    def __init__(self):
        self.steps: list[tuple[int, int, list[int], list[int]]] = []  # revealed, redecided, accepted, insertion

    def observe(self, step: Step, gap: range, end: int) -> None:
        window = step.argmax[0, gap.start : gap.stop].tolist()
        insertion = window[: window.index(end) + 1] if end in window else window
        accepted = (step.accepted[0, gap.start : gap.stop].nonzero().flatten()).tolist()
        self.steps.append((int(step.revealed[0]), int(step.redecided[0]), accepted, insertion))

    def counts(self) -> PassCounts:
        if not self.steps:
            return PassCounts()
        final = self.steps[-1][3]
        same = next((i for i, s in enumerate(reversed(self.steps)) if s[3] != final), len(self.steps))
        runs = [(insertion, len(list(group))) for insertion, group in groupby(s[3] for s in self.steps)]
        return PassCounts(
            passes=len(self.steps),
            without_reveal=sum(revealed == 0 for revealed, *_ in self.steps),
            one_token=sum(revealed == 1 for revealed, *_ in self.steps),
            redecided=sum(redecided > 0 for _, redecided, *_ in self.steps),
            after_final=same - 1,
            past_end=sum(bool(accepted) and min(accepted) >= len(final) for _, _, accepted, _ in self.steps),
            unfinal_run=max((length for insertion, length in runs if insertion != final), default=0),
        )


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


@dataclass(frozen=True)
class _Canvas:
    """The rows being denoised: their clamped tokens and where the gaps are."""

    tokens: torch.LongTensor  # (rows, canvas) known tokens; gap slots hold anything
    known: torch.BoolTensor  # (rows, canvas)
    gaps: list[range]
    gap_mask: torch.BoolTensor  # (rows, canvas)
    end: int

    def past_end(self, tokens: torch.LongTensor) -> torch.BoolTensor:
        return _past_end(tokens, self.gaps, self.end)


class MaskNoise:
    """Mask noise: a slot is masked until revealed, then keeps its token."""

    def __init__(self, ids: SpecialIds, shape: tuple[int, int], device):
        self.mask = ids.mask
        self.canvas = torch.full(shape, ids.mask, dtype=torch.long, device=device)  # what unused slots hold

    def held(self, current: torch.LongTensor, canvas: _Canvas) -> torch.BoolTensor:
        """Gap slots whose token stands: the revealed ones."""
        return (current != self.mask) & ~canvas.known

    def scored(self, current: torch.LongTensor, canvas: _Canvas) -> torch.BoolTensor:
        """Slots that need logits: every gap slot up to a revealed END (revealed ones feed the draft's evidence)."""
        return ~canvas.known & ~canvas.past_end(current)

    def accept(self, proposal: torch.LongTensor, kept: torch.BoolTensor) -> torch.LongTensor:
        """Kept slots take the proposal; the others are masked again."""
        return torch.where(kept, proposal, self.canvas)

    def draft(self, argmax: torch.LongTensor, current: torch.LongTensor, canvas: _Canvas) -> torch.LongTensor:
        """What the canvas now holds, the argmax in its masked slots."""
        return torch.where(self._open(current, canvas) & (current != self.mask), current, argmax)

    def done(self, current: torch.LongTensor, canvas: _Canvas) -> torch.BoolTensor:
        """No slot before END is masked."""
        return ~(self._open(current, canvas) & (current == self.mask)).any(dim=-1)

    def _open(self, current, canvas: _Canvas) -> torch.BoolTensor:
        """Gap slots before END: any other slot is known or unused."""
        return canvas.gap_mask & ~canvas.past_end(current)


class UniformNoise:
    """transformers' uniform noise: every slot not accepted is drawn again from the whole vocabulary."""

    def __init__(self, vocab: int, shape: tuple[int, int], device):
        self.vocab = vocab
        self.canvas = torch.randint(0, vocab, shape, device=device)  # the starting noise, also what unused slots hold

    def held(self, current: torch.LongTensor, canvas: _Canvas) -> torch.BoolTensor:
        return torch.zeros_like(canvas.known)

    def scored(self, current: torch.LongTensor, canvas: _Canvas) -> torch.BoolTensor:
        return ~canvas.known

    def accept(self, proposal: torch.LongTensor, kept: torch.BoolTensor) -> torch.LongTensor:
        return torch.where(kept, proposal, torch.randint(0, self.vocab, proposal.shape, device=proposal.device))

    def draft(self, argmax: torch.LongTensor, current: torch.LongTensor, canvas: _Canvas) -> torch.LongTensor:
        return argmax

    def done(self, current: torch.LongTensor, canvas: _Canvas) -> torch.BoolTensor:
        return torch.zeros(current.shape[:1], dtype=torch.bool, device=current.device)


def _sample(
    logits: torch.Tensor, argmax: torch.LongTensor, live: torch.BoolTensor, generator: torch.Generator | None
) -> tuple[torch.LongTensor, torch.Tensor]:
    """A token drawn for each live slot (pinned slots keep the argmax) and each live slot's top
    probability (0 elsewhere). Drawing for the live slots alone saves the softmax and the draw
    over the whole vocabulary for the pinned ones, most of the canvas once END is placed."""
    sampled, top = argmax.clone(), torch.zeros(live.shape, device=logits.device)
    if live.any():
        probs = torch.softmax(logits[live], dim=-1, dtype=torch.float32)
        sampled[live] = torch.multinomial(probs, 1, generator=generator).squeeze(-1)
        top[live] = probs.max(dim=-1).values
    return sampled, top


def _entropy(logits: torch.Tensor, live: torch.BoolTensor | None) -> torch.Tensor:
    """Per-slot entropy (rows, canvas): pinned slots are one-hot, so theirs is exactly zero and
    computing it for the live slots alone (`live`) gives the same tensor."""
    if live is None:
        return torch.distributions.Categorical(logits=logits).entropy()
    entropy = torch.zeros(live.shape, dtype=torch.float32, device=logits.device)
    if live.any():
        entropy[live] = torch.distributions.Categorical(logits=logits[live].float()).entropy()
    return entropy


def entropy_bound_accept(entropy: torch.Tensor, live: torch.BoolTensor, bound: float) -> torch.BoolTensor:
    """The live slots transformers' `EntropyBoundSampler.accept_canvas` accepts (arXiv:2505.24857): the
    lowest-entropy slots whose summed entropy less the largest stays within `bound`, so at least one.

    `entropy` is per slot (rows, canvas), zero outside `live` (pinned slots are one-hot). The library's
    entry point takes logits and computes this entropy itself, which the stopping rule and the draft's
    evidence need too: its rule is applied here to the entropy computed once a step, and
    tests/engine/completion/test_sampler.py pins it to `accept_canvas` on random canvases."""
    entropy = torch.where(live, entropy, 0.0)
    ascending, order = torch.sort(entropy, dim=-1)
    within = torch.cumsum(ascending, dim=-1) - ascending <= bound  # the sorted entropy is the running maximum
    return torch.zeros_like(live).scatter(-1, order, within) & live


def accept(
    entropy: torch.Tensor, top: torch.Tensor, live: torch.BoolTensor, settings: DenoiseSettings
) -> torch.BoolTensor:
    """Live slots kept this step: the entropy bound's, and those at least `accept_probability` likely."""
    accepted = entropy_bound_accept(entropy, live, settings.entropy_bound)
    if settings.accept_probability > 0:
        accepted |= live & (top >= settings.accept_probability)
    return accepted


class _Stability:
    """Whether each row's argmax is the one of the last `steps` steps (0: always): the stability half
    of transformers' `StableAndConfidentStoppingCriteria`, also used on the draft's insertion alone
    (`stable_insertion`). The library's entry point takes the logits and computes the entropy over
    every slot's vocabulary a second time; `_finished` takes the entropy computed once on the live
    slots, and tests/engine/completion/test_sampler.py pins the two to the library on random canvases."""

    def __init__(self, steps: int):
        self.history: deque[torch.LongTensor] = deque(maxlen=steps)
        self.steps = steps

    def __call__(self, argmax: torch.LongTensor) -> torch.BoolTensor:
        stable = torch.full(argmax.shape[:1], len(self.history) == self.steps, device=argmax.device)
        for earlier in self.history:
            stable &= (earlier == argmax).all(dim=-1)
        self.history.append(argmax)
        return stable


def _canvas(canvas: Canvas, batch: torch.LongTensor | None, ids: SpecialIds, device) -> _Canvas:
    tokens = batch if batch is not None else torch.tensor([canvas.tokens], device=device)
    rows, length = tokens.shape
    gap_mask = torch.zeros(length, dtype=torch.bool, device=device)
    for gap in canvas.gaps:
        gap_mask[gap.start : gap.stop] = True
    known = torch.tensor(canvas.known, device=device).expand(rows, length)
    return _Canvas(tokens, known, list(canvas.gaps), gap_mask.expand(rows, length), ids.end)


def _noise(kind: str, ids: SpecialIds, vocab: int, shape: tuple[int, int], device) -> MaskNoise | UniformNoise:
    return MaskNoise(ids, shape, device) if kind == "mask" else UniformNoise(vocab, shape, device)


@torch.no_grad()  # not inference_mode: quantized experts cannot be selected in it (engine.quantization)
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
    settings = settings.resolved()
    device = model.device
    layout = _canvas(canvas, batch, ids, device)
    shape = tuple(layout.tokens.shape)
    noise_kind = _noise(noise, ids, model.config.text_config.vocab_size, shape, device)
    logits_processor = LogitsProcessorList(processors or [])
    logits_processor.append(
        LinearTemperatureScheduleLogitsProcessor(settings.t_min, settings.t_max, settings.max_steps)
    )
    stable = _Stability(settings.stability_threshold)
    insertion_stable = _Stability(settings.stable_insertion)
    banned = torch.tensor([ids.mask, ids.pad, ids.bos, *ids.unwritten], device=device)
    current = torch.where(layout.known, layout.tokens, start if start is not None else noise_kind.canvas)
    carried = noise_kind.held(current, layout)  # gap slots holding a token going into a step
    self_conditioning = None
    offset = cache.get_seq_length()
    positions = torch.arange(offset, offset + shape[1], device=device).unsqueeze(0)

    for passes, cur_step in enumerate(reversed(range(1, settings.max_steps + 1)), start=1):
        if cancelled():
            return
        hidden = model.model.decoder(
            decoder_input_ids=current,
            cache=cache,
            self_conditioning_logits=self_conditioning,
            decoder_position_ids=positions,
        ).last_hidden_state
        scored = noise_kind.scored(current, layout) if settings.live_logits else None
        logits = logits_processor(None, _slot_logits(model, hidden, scored), cur_step=cur_step)
        logits[..., banned] = float("-inf")  # structural and special tokens never fill a slot
        held = noise_kind.held(current, layout)
        argmax = torch.where(layout.known, layout.tokens, torch.where(held, current, logits.argmax(dim=-1)))
        unused = layout.past_end(argmax)
        argmax = torch.where(unused, ids.mask, argmax)
        conditioning = pin(logits, layout.known | unused, argmax)  # as in training, where revealed slots are not pinned
        live = ~(layout.known | unused | held)
        logits = pin(logits, ~live, argmax)

        sampled, top = _sample(logits, argmax, live, generator)
        entropy = _entropy(logits, live if settings.live_logits else None)
        accepted = accept(entropy, top, live, settings)
        before = current
        current = noise_kind.accept(torch.where(live, sampled, argmax), accepted | ~live)
        current = torch.where(layout.known, layout.tokens, current)
        past_end = layout.past_end(current)
        current = torch.where(past_end, noise_kind.canvas, current)

        live_count = live.sum(dim=-1).clamp(min=1)
        finished = _finished(settings, stable(argmax), entropy, live_count)
        argmax = noise_kind.draft(argmax, current, layout)
        if settings.stable_insertion:
            finished = finished | insertion_stable(argmax)
        finished = finished | noise_kind.done(current, layout)
        self_conditioning = conditioning.to(model.dtype)
        revealed = accepted & ~past_end
        redecided = (carried & (current != before)).sum(dim=-1)
        carried = (held | accepted) & layout.gap_mask & ~past_end
        yield Step(
            passes,
            argmax,
            current,
            logits,
            entropy.sum(dim=-1) / live_count,
            finished,
            live,
            accepted,
            revealed.sum(dim=-1),
            redecided,
        )
        if finished.all():
            return


def _finished(
    settings: DenoiseSettings, stable: torch.BoolTensor, entropy: torch.Tensor, live_count: torch.Tensor
) -> torch.BoolTensor:
    """Stable and confident: the mean entropy over the live slots under the threshold (pinned slots
    count as zero in the mean over the canvas, hence the scaled threshold). transformers' rule takes the
    mean over the whole canvas, which with few live slots left would stop on pinned slots' certainty."""
    length = entropy.shape[-1]
    return stable & (entropy.mean(dim=-1) < settings.confidence_threshold * live_count / length)
