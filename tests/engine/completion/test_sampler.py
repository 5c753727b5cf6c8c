"""Specification of the denoising loop on a clamped canvas (diffusion_infill.engine.completion.sampler.denoise)."""

import itertools
from dataclasses import replace

import pytest
import torch
from transformers import LogitsProcessor
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    EntropyBoundSampler,
    EntropyBoundSamplerConfig,
    StableAndConfidentStoppingCriteria,
)

from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings
from diffusion_infill.engine.completion.prefix_cache import PrefixCache
from diffusion_infill.engine.completion.sampler import (
    PassCounts,
    PassLog,
    SlotBan,
    SlotVocabulary,
    Step,
    _entropy,
    _finished,
    _Stability,
    denoise,
    entropy_bound_accept,
    pin,
)

# never stops early: random weights are far from confident, and nothing is below 0 entropy
NO_EARLY_STOP = DenoiseSettings(max_steps=4, confidence_threshold=0.0)
PREFIX = "def area(width, height):\n    return "


@pytest.fixture
def model(tiny_loaded):
    return tiny_loaded.model


@pytest.fixture
def cache(tiny_loaded, ids):
    tokens = tiny_loaded.tokenizer.encode(PREFIX, add_special_tokens=False)
    return PrefixCache().encode(tiny_loaded.model, [ids.bos, *tokens])


@pytest.fixture
def repair_canvas(tiny_loaded, ids):
    """Two gaps between known segments."""
    encode = tiny_loaded.tokenizer.encode
    segments = [
        encode("width", add_special_tokens=False),
        5,
        encode(" * ", add_special_tokens=False),
        6,
        encode("\n", add_special_tokens=False),
    ]
    return canvas_layout.build(segments, ids.mask)


@pytest.fixture
def completion_canvas(tiny_loaded, ids):
    suffix = tiny_loaded.tokenizer.encode(")\n", add_special_tokens=False)
    return canvas_layout.completion_canvas(suffix, 12, 4, ids)


def run(model, cache, canvas, ids, settings=NO_EARLY_STOP, **options):
    generator = torch.Generator().manual_seed(0)
    return list(denoise(model, cache, canvas, ids, settings, generator=generator, **options))


def known_slots(canvas):
    return torch.tensor(canvas.known)


# Clamping


def test_known_slots_never_change_in_the_argmax(model, cache, repair_canvas, ids):
    known = known_slots(repair_canvas)
    expected = torch.tensor(repair_canvas.tokens)[known]

    for step in run(model, cache, repair_canvas, ids):
        assert torch.equal(step.argmax[0, known], expected)


def test_known_slots_never_change_in_the_current_canvas(model, cache, repair_canvas, ids):
    known = known_slots(repair_canvas)
    expected = torch.tensor(repair_canvas.tokens)[known]

    for step in run(model, cache, repair_canvas, ids):
        assert torch.equal(step.current[0, known], expected)


def test_uniform_noise_also_keeps_known_slots(model, cache, repair_canvas, ids):
    known = known_slots(repair_canvas)
    expected = torch.tensor(repair_canvas.tokens)[known]

    steps = run(model, cache, repair_canvas, ids, noise="uniform")

    assert len(steps) == NO_EARLY_STOP.max_steps
    for step in steps:
        assert torch.equal(step.argmax[0, known], expected)
        assert torch.equal(step.current[0, known], expected)


def test_gap_slots_never_hold_special_tokens_other_than_end(model, cache, repair_canvas, ids, tiny_loaded):
    """Not even where the model prefers them: a special token decodes to markup such as
    `<image>`, which would be written into the file."""
    special = sorted(tiny_loaded.tokenizer.added_tokens_decoder)

    class PreferSpecial(LogitsProcessor):
        def __call__(self, input_ids, scores, cur_step):
            scores[..., special] += 1e4
            scores[..., ids.end] -= 2e4
            return scores

    gap_slots = ~known_slots(repair_canvas)
    for step in run(model, cache, repair_canvas, ids, processors=[PreferSpecial()]):
        assert not torch.isin(step.argmax[0, gap_slots], torch.tensor(special)).any()
        assert not torch.isin(step.current[0, gap_slots], torch.tensor([i for i in special if i != ids.mask])).any()


# Slots after END


def end_at(slot, ids):
    """Forces END into one slot, so the test does not depend on what random weights pick."""
    return [SlotVocabulary(slot, torch.tensor([ids.end]))]


def test_slots_after_a_gaps_end_are_noise_in_the_current_canvas(model, cache, completion_canvas, ids):
    steps = run(model, cache, completion_canvas, ids, processors=end_at(3, ids))

    assert any(int(step.current[0, 3]) == ids.end for step in steps)
    for step in steps:
        current = step.current[0].tolist()
        for position in canvas_layout.after_end(current, completion_canvas, ids):
            assert current[position] == ids.mask


def test_slots_after_a_gaps_end_are_mask_in_the_argmax(model, cache, completion_canvas, ids):
    gap = completion_canvas.gaps[0]

    for step in run(model, cache, completion_canvas, ids, processors=end_at(3, ids)):
        assert int(step.argmax[0, 3]) == ids.end
        assert step.argmax[0, 4 : gap.stop].eq(ids.mask).all()


def test_end_in_one_gap_does_not_noise_the_next_gap(model, cache, repair_canvas, ids):
    first, second = repair_canvas.gaps
    steps = run(model, cache, repair_canvas, ids, processors=end_at(first.start, ids))

    for step in steps:
        assert not step.argmax[0, second.start : second.stop].eq(ids.mask).all()


# Step count, stopping and cancellation


def test_steps_are_counted_from_one(model, cache, completion_canvas, ids):
    steps = run(model, cache, completion_canvas, ids)

    assert [step.step for step in steps] == list(range(1, len(steps) + 1))


@pytest.mark.parametrize("max_steps", [1, 3])
def test_runs_at_most_max_steps(model, cache, completion_canvas, ids, max_steps):
    settings = DenoiseSettings(max_steps=max_steps, confidence_threshold=0.0)

    assert len(run(model, cache, completion_canvas, ids, settings)) == max_steps


def test_stops_early_once_stable_and_confident(model, cache, completion_canvas, ids):
    # every slot pinned to END or past it: a stable, zero-entropy canvas after two steps; uniform
    # noise, since with mask noise the first step reveals everything and ends the loop anyway
    settings = DenoiseSettings(max_steps=8, stability_threshold=1, confidence_threshold=1.0)
    steps = run(model, cache, completion_canvas, ids, settings, processors=end_at(0, ids), noise="uniform")

    assert len(steps) == 2
    assert steps[-1].finished.all()


def test_uniform_noise_runs_every_step_when_nothing_is_stable_and_confident(model, cache, completion_canvas, ids):
    settings = DenoiseSettings(max_steps=8, stability_threshold=1, confidence_threshold=0.0)

    assert len(run(model, cache, completion_canvas, ids, settings, processors=end_at(0, ids), noise="uniform")) == 8


class Prefer(LogitsProcessor):
    """A large bias towards one token per slot: the argmax is fixed, the entropy small but not zero."""

    def __init__(self, tokens: dict[int, int], bias: float = 15.0):
        self.tokens = tokens
        self.bias = bias

    def __call__(self, input_ids, scores, cur_step):
        scores = scores.clone()
        for slot, token in self.tokens.items():
            scores[:, slot, token] += self.bias
        return scores


def settled_insertion(ids):
    """Slots 0-3 written, END at slot 4: the insertion is the same from the first step on."""
    return Prefer({0: 40, 1: 41, 2: 42, 3: 43, 4: ids.end})


ONE_AT_A_TIME = DenoiseSettings(max_steps=12, confidence_threshold=0.0, entropy_bound=1e-9)


def test_a_tiny_entropy_bound_reveals_one_slot_a_step(model, cache, completion_canvas, ids):
    steps = run(model, cache, completion_canvas, ids, ONE_AT_A_TIME, processors=[settled_insertion(ids)])

    assert len(steps) == 5
    assert [int(step.revealed[0]) for step in steps] == [1] * 5
    assert steps[-1].argmax[0, :5].tolist() == [40, 41, 42, 43, ids.end]


@pytest.mark.parametrize("passes", [1, 2])
def test_stops_once_the_insertion_is_unchanged_for_stable_insertion_steps(model, cache, completion_canvas, ids, passes):
    settings = replace(ONE_AT_A_TIME, stable_insertion=passes)
    steps = run(model, cache, completion_canvas, ids, settings, processors=[settled_insertion(ids)])

    assert len(steps) == passes + 1
    assert steps[-1].finished.all()
    assert steps[-1].argmax[0, :5].tolist() == [40, 41, 42, 43, ids.end]


def test_slots_at_least_accept_probability_likely_are_accepted_together(model, cache, completion_canvas, ids):
    settings = replace(ONE_AT_A_TIME, accept_probability=0.9)
    (step,) = run(model, cache, completion_canvas, ids, settings, processors=[settled_insertion(ids)])

    assert int(step.revealed[0]) == 5
    assert step.current[0, :5].tolist() == [40, 41, 42, 43, ids.end]


# Acceptance: transformers' rule


@pytest.mark.parametrize("seed", range(50))
def test_entropy_bound_acceptance_is_transformers_accept_canvas_on_the_whole_canvas(seed):
    """The rule applied to the entropy the loop computes once, on the live slots, picks what the
    library's entry point picks from the logits of the whole canvas (pinned slots: zero entropy)."""
    generator = torch.Generator().manual_seed(seed)
    rows, length, vocab = 3, 10, 50
    logits = torch.randn(rows, length, vocab, generator=generator) * 3
    live = torch.rand(rows, length, generator=generator) < 0.6
    bound = float(torch.rand(1, generator=generator) * 3)
    canvas = torch.zeros(rows, length, dtype=torch.long)
    pinned = pin(logits, ~live, canvas)
    whole = EntropyBoundSampler(EntropyBoundSamplerConfig(entropy_bound=bound), length, vocab, 1)
    whole.accept_canvas(canvas, canvas, pinned, cur_step=1)

    assert torch.equal(entropy_bound_accept(_entropy(pinned, live), live, bound), whole.accepted_token_mask & live)


@pytest.mark.parametrize("stability_threshold", [0, 1, 2])
@pytest.mark.parametrize("seed", range(20))
def test_stopping_is_transformers_stable_and_confident_on_the_live_slots(seed, stability_threshold):
    """Step after step on random canvases, the loop's stopping rule (`_Stability` and `_finished`, on the
    entropy computed once) stops exactly where `StableAndConfidentStoppingCriteria` stops when given
    the live slots' logits: its confidence is the mean over the slots it is given."""
    generator = torch.Generator().manual_seed(seed)
    rows, length, vocab, width, steps = 4, 12, 30, 5, 8
    settings = DenoiseSettings(stability_threshold=stability_threshold, confidence_threshold=0.5)
    local, library = _Stability(stability_threshold), StableAndConfidentStoppingCriteria(stability_threshold, 0.5)
    argmax = torch.randint(0, vocab, (rows, length), generator=generator)
    stopped = 0
    for _ in range(steps):
        changed = torch.rand(rows, 1, generator=generator) < 0.3  # some rows keep their argmax
        argmax = torch.where(changed, torch.randint(0, vocab, (rows, length), generator=generator), argmax)
        live = torch.rand(rows, length, generator=generator).argsort(dim=-1) < width  # `width` live slots a row
        sharpness = torch.rand(rows, 1, 1, generator=generator) * 12  # some rows confident, some not
        logits = torch.randn(rows, length, vocab, generator=generator) * sharpness
        pinned = pin(logits, ~live, argmax)
        ours = _finished(settings, local(argmax), _entropy(pinned, live), live.sum(dim=-1))
        theirs = library(argmax, logits[live].view(rows, width, vocab))
        assert torch.equal(ours, theirs)
        stopped += int(ours.sum())
    assert stopped or stability_threshold == 2, "no row ever stopped: the case checks nothing"


# Live and pinned slots


def test_live_slots_are_the_masked_gap_slots_before_end_and_the_rest_is_pinned(model, cache, completion_canvas, ids):
    steps = run(model, cache, completion_canvas, ids, ONE_AT_A_TIME, processors=[settled_insertion(ids)])

    known = known_slots(completion_canvas)
    assert steps[0].live[0].tolist() == [True] * 5 + [False] * (len(completion_canvas) - 5)
    for earlier, later in itertools.pairwise(steps):
        revealed = (earlier.current[0] != ids.mask) & ~known
        assert torch.equal(later.live[0], ~known & ~revealed & steps[0].live[0])
        pinned = ~later.live[0]
        assert torch.equal(later.logits[0, pinned].argmax(-1), later.argmax[0, pinned])
        assert torch.equal(later.accepted[0] & pinned, torch.zeros_like(pinned))


# Revealing (mask noise)


def test_a_revealed_slot_keeps_its_token_in_every_later_step(model, cache, completion_canvas, ids):
    steps = run(model, cache, completion_canvas, ids, DenoiseSettings(max_steps=12, confidence_threshold=0.0))
    gap = completion_canvas.gaps[0]
    checked = 0
    for earlier, later in itertools.pairwise(steps):
        tokens, argmax = earlier.current[0].tolist(), later.argmax[0].tolist()
        # unless the model ends the insertion before it: the slots after its END are dropped
        end = argmax.index(ids.end, gap.start) if ids.end in argmax[gap.start : gap.stop] else gap.stop - 1
        for slot in range(gap.start, end + 1):
            if tokens[slot] != ids.mask:
                assert later.current[0, slot] == tokens[slot]
                checked += 1
    assert checked


def test_each_step_reveals_at_least_one_slot_and_the_loop_ends_when_none_is_masked(
    model, cache, completion_canvas, ids
):
    steps = run(model, cache, completion_canvas, ids, DenoiseSettings(max_steps=12, confidence_threshold=0.0))
    gap = completion_canvas.gaps[0]
    assert len(steps) <= len(gap) and steps[-1].finished.all()
    final = steps[-1].current[0, gap.start : gap.stop].tolist()
    live = final[: final.index(ids.end) + 1] if ids.end in final else final
    assert ids.mask not in live
    assert steps[-1].argmax[0, gap.start : gap.start + len(live)].tolist() == live  # the draft is the canvas


def test_a_warm_start_that_fills_the_gap_is_kept_as_it_is(model, cache, completion_canvas, ids):
    start = torch.tensor([completion_canvas.tokens])
    start[0, :3] = torch.tensor([40, 41, ids.end])
    (step,) = run(
        model, cache, completion_canvas, ids, DenoiseSettings(max_steps=12, confidence_threshold=0.0), start=start
    )

    assert step.argmax[0, :3].tolist() == [40, 41, ids.end] and step.finished.all()


def test_cancellation_between_steps_stops_the_loop(model, cache, completion_canvas, ids):
    seen = []
    for step in denoise(model, cache, completion_canvas, ids, NO_EARLY_STOP, cancelled=lambda: len(seen) >= 2):
        seen.append(step)

    assert [step.step for step in seen] == [1, 2]


def test_cancelled_before_the_first_step_yields_nothing(model, cache, completion_canvas, ids):
    assert run(model, cache, completion_canvas, ids, cancelled=lambda: True) == []


def test_step_tensors_have_batch_and_canvas_dimensions(model, cache, completion_canvas, ids):
    step = run(model, cache, completion_canvas, ids)[0]
    length, vocab = len(completion_canvas), model.config.text_config.vocab_size

    assert step.argmax.shape == step.current.shape == (1, length)
    assert step.logits.shape == (1, length, vocab)
    assert step.mean_entropy.shape == step.finished.shape == (1,)


# Logits on the live slots only


@pytest.mark.parametrize("noise", ["mask", "uniform"])
def test_live_slot_logits_give_the_tokens_of_whole_canvas_logits(model, cache, completion_canvas, ids, noise):
    """The lm_head skips pinned slots and slots after a revealed END, the entropy skips every
    pinned slot: for a fixed seed, every step holds the same tokens as the whole-canvas pass."""
    settings = DenoiseSettings(max_steps=8, confidence_threshold=0.0)
    full = replace(settings, live_logits=False)
    torch.manual_seed(1)  # uniform noise draws its canvas from the global generator
    live_steps = run(model, cache, completion_canvas, ids, settings, noise=noise, processors=end_at(5, ids))
    torch.manual_seed(1)
    full_steps = run(model, cache, completion_canvas, ids, full, noise=noise, processors=end_at(5, ids))

    assert len(live_steps) == len(full_steps) > 1
    for live, whole in zip(live_steps, full_steps, strict=True):
        assert torch.equal(live.argmax, whole.argmax)
        assert torch.equal(live.current, whole.current)
        assert torch.equal(live.finished, whole.finished)
        torch.testing.assert_close(live.mean_entropy, whole.mean_entropy)


def test_live_slot_logits_match_the_models_own_logits(model, cache, completion_canvas, ids):
    """The first step's logits of a still-masked gap slot are the model's forward logits (processed)."""
    settings = DenoiseSettings(max_steps=1, confidence_threshold=0.0, t_min=1.0, t_max=1.0)
    canvas = torch.tensor([completion_canvas.tokens])
    length = cache.get_seq_length()
    positions = torch.arange(length, length + canvas.shape[1]).unsqueeze(0)
    with torch.no_grad():
        expected = model(decoder_input_ids=canvas, cache=cache, decoder_position_ids=positions).logits

    (step,) = run(model, cache, completion_canvas, ids, settings)

    gap = completion_canvas.gaps[0]
    masked = step.current[0, gap.start : gap.stop] == ids.mask  # revealed slots are pinned in Step.logits
    assert masked.any()
    banned = torch.isinf(step.logits[0, gap.start : gap.stop][masked])
    torch.testing.assert_close(
        step.logits[0, gap.start : gap.stop][masked][~banned], expected[0, gap.start : gap.stop][masked][~banned]
    )


# Batches


def test_batch_rows_are_denoised_together_each_with_its_own_known_tokens(tiny_loaded, completion_canvas, ids):
    model, tokenizer = tiny_loaded.model, tiny_loaded.tokenizer
    rows = torch.tensor([completion_canvas.tokens] * 3)
    gap = completion_canvas.gaps[0]
    rows[1, gap.stop :] = ids.eos
    rows[2, gap.stop :] = torch.arange(10, 10 + len(completion_canvas) - gap.stop)
    known = known_slots(completion_canvas)
    # the cache holds one encoded prefix per row
    cache = PrefixCache().encode(model, [ids.bos, *tokenizer.encode(PREFIX, add_special_tokens=False)])
    cache.batch_repeat_interleave(len(rows))

    steps = run(model, cache, completion_canvas, ids, batch=rows)

    assert len(steps) == NO_EARLY_STOP.max_steps
    for step in steps:
        assert step.argmax.shape == step.current.shape == rows.shape
        assert torch.equal(step.argmax[:, known], rows[:, known])
        assert torch.equal(step.current[:, known], rows[:, known])


# Warm start


def test_warm_start_is_what_the_first_step_sees(model, cache, completion_canvas, ids):
    start = torch.tensor([completion_canvas.tokens])
    start[0, :3] = torch.tensor([40, 41, ids.end])
    settings = DenoiseSettings(max_steps=1, confidence_threshold=0.0)

    (cold,) = run(model, cache, completion_canvas, ids, settings)
    (warm,) = run(model, cache, completion_canvas, ids, settings, start=start)

    assert not torch.allclose(cold.logits, warm.logits)


def test_warm_start_does_not_override_known_slots(model, cache, completion_canvas, ids):
    start = torch.full((1, len(completion_canvas)), 40)
    known = known_slots(completion_canvas)

    for step in run(model, cache, completion_canvas, ids, start=start):
        assert torch.equal(step.current[0, known], torch.tensor(completion_canvas.tokens)[known])


# Restricting a slot's vocabulary


def test_slot_vocabulary_restricts_the_slot_to_the_allowed_tokens(model, cache, completion_canvas, ids):
    allowed = torch.tensor([100, 101, 102, 250])

    for step in run(model, cache, completion_canvas, ids, processors=[SlotVocabulary(0, allowed)]):
        assert int(step.argmax[0, 0]) in allowed.tolist()
        assert int(step.current[0, 0]) in [*allowed.tolist(), ids.mask]


def test_slot_vocabulary_leaves_other_slots_unrestricted():
    scores = torch.zeros(2, 3, 5)
    restricted = SlotVocabulary(1, torch.tensor([2, 4]))(None, scores, cur_step=1)

    assert torch.equal(restricted[:, 0], scores[:, 0])
    assert torch.equal(restricted[:, 2], scores[:, 2])
    assert torch.isinf(restricted[:, 1, [0, 1, 3]]).all()
    assert torch.equal(restricted[:, 1, [2, 4]], torch.zeros(2, 2))


def test_slot_ban_keeps_a_token_out_of_the_given_slots_only():
    scores = torch.zeros(1, 6, 10)
    banned = SlotBan(range(0, 2), token=4)(None, scores, cur_step=1)
    assert torch.isinf(banned[0, :2, 4]).all()
    assert not torch.isinf(banned[0, 2:, :]).any()
    assert not torch.isinf(banned[0, :2, :4]).any()


# Where the passes go


def fake_step(insertion: list[int], accepted: list[int], revealed: int, redecided: int = 0, slots: int = 6):
    """A Step of one row whose draft holds `insertion` (then mask) and that accepted `accepted` gap slots."""
    argmax = torch.tensor([insertion + [0] * (slots - len(insertion))])
    mask = torch.zeros(1, slots, dtype=torch.bool)
    mask[0, accepted] = True
    return Step(
        1,
        argmax,
        argmax,
        torch.zeros(1, slots, 2),
        torch.zeros(1),
        torch.zeros(1, dtype=torch.bool),
        mask,
        mask,
        torch.tensor([revealed]),
        torch.tensor([redecided]),
    )


def test_pass_counts_say_what_each_pass_did():
    end = 9
    log = PassLog()
    for step in (
        fake_step([5, end], [3], revealed=0),  # accepted only past the final END (it is at slot 2)
        fake_step([5, 6, end], [0], revealed=1),
        fake_step([5, 6, end], [1, 2], revealed=2, redecided=1),
        fake_step([5, 7, end], [1], revealed=1),
        fake_step([5, 6, end], [5], revealed=0),
    ):
        log.observe(step, range(0, 6), end)

    assert log.counts() == PassCounts(
        passes=5, without_reveal=2, one_token=2, redecided=1, after_final=0, past_end=2, unfinal_run=1
    )


def test_passes_after_the_insertion_is_final_are_counted_and_the_longest_unfinal_run():
    end = 9
    log = PassLog()
    for insertion in ([5, end], [5, end], [6, end], [6, end], [6, end]):
        log.observe(fake_step(insertion, [0], revealed=1), range(0, 6), end)

    counts = log.counts()
    assert counts.after_final == 2 and counts.unfinal_run == 2
