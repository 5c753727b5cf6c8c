"""Specification of one inline completion (diffusion_infill.engine.completion.infill): drafts, growing, closure."""

import dataclasses
import itertools

import pytest
import torch

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings, save_tuning
from diffusion_infill.engine.completion.infill import Draft, InfillEngine, InfillRequest
from diffusion_infill.engine.completion.prefix import encode_context
from diffusion_infill.engine.loading import LoadedModel
from diffusion_infill.engine.settings import EngineSettings

FAST = DenoiseSettings(max_steps=4)
ALL_SLOTS = DenoiseSettings(max_steps=12)  # a step reveals at least one of the tiny canvas's 12 gap slots

# cursor positions where junk easily breaks the file: the final draft must not
CLOSURE_CASES = [
    pytest.param("result = compute(value", "", id="unclosed-call"),
    pytest.param("print(", ")\n", id="auto-paired-paren"),
    pytest.param("items = [1, 2, ", "]\n", id="auto-paired-bracket"),
    pytest.param("x = {'a': (", ")}\n", id="nested-pairs"),
    pytest.param("def f(x):\n    ", "\n", id="empty-line"),
    pytest.param('name = "', '"\n', id="open-string"),
    pytest.param("", "", id="empty-file"),
]


def engine_for(loaded, **settings):
    return InfillEngine(loaded, EngineSettings(denoise=settings.pop("denoise", FAST), **settings))


def complete(engine, prefix, suffix, language="python", **options) -> list[Draft]:
    return list(engine.complete(InfillRequest(prefix, suffix, language), **options))


# The prefix cache (engine.completion.prefix_cache) as the engine uses it


def test_consecutive_requests_at_a_growing_cursor_reuse_the_prefix(tiny_loaded):
    engine = engine_for(tiny_loaded, denoise=DenoiseSettings(max_steps=1))
    complete(engine, "def area(width, height):\n", "")
    complete(engine, "def area(width, height):\n    return ", "")

    assert engine.prefix_cache.reused_tokens > 0


def test_the_encoder_reads_the_context_lines_the_spec_asks_for(tiny_loaded):
    prefix = "TARGET_SETTING = 1\n" + "".join(f"filler_{n} = {n}\n" for n in range(300)) + "x = TARGET_SETTING"
    spec = dataclasses.replace(tiny_loaded.spec, context_tokens=32)
    engine = engine_for(dataclasses.replace(tiny_loaded, spec=spec), denoise=DenoiseSettings(max_steps=1))
    complete(engine, prefix, "")
    ids = tiny_loaded.ids
    context = encode_context(
        tiny_loaded.tokenizer, ids.bos, prefix, "", spec.max_prefix, spec.suffix_head, context_tokens=32
    )

    assert engine.prefix_cache.ids == context.prefix_ids
    assert (
        context.prefix_ids
        != encode_context(tiny_loaded.tokenizer, ids.bos, prefix, "", spec.max_prefix, spec.suffix_head).prefix_ids
    )


# Drafts


def test_drafts_count_steps_upward(tiny_loaded):
    drafts = complete(engine_for(tiny_loaded), "print(", ")\n")
    steps = [draft.step for draft in drafts if not draft.final]

    assert steps == list(range(1, len(steps) + 1))


def test_with_mask_noise_each_draft_extends_the_one_before(tiny_loaded):
    # a draft shows only revealed slots, which later steps keep: the ghost text only grows
    assert tiny_loaded.spec.noise == "mask"
    engine = engine_for(tiny_loaded, mode="multi-line", repair_rounds=0, denoise=ALL_SLOTS)
    texts = [draft.text for draft in complete(engine, "def area(width, height):\n    ", "\n") if not draft.final]

    assert texts[-1]  # something was revealed, so growing is not trivially true
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(texts))


def test_exactly_one_final_draft_and_it_comes_last(tiny_loaded):
    drafts = complete(engine_for(tiny_loaded), "print(", ")\n")

    assert [draft.final for draft in drafts] == [False] * (len(drafts) - 1) + [True]


def test_final_draft_reports_the_steps_taken(tiny_loaded):
    drafts = complete(engine_for(tiny_loaded), "print(", ")\n")

    assert drafts[-1].step == drafts[-2].step


def test_final_draft_is_marked_valid(tiny_loaded):
    assert complete(engine_for(tiny_loaded), "print(", ")\n")[-1].valid is True


@pytest.mark.parametrize("mode", ["single-line", "multi-line"])
@pytest.mark.parametrize(("prefix", "suffix"), CLOSURE_CASES)
def test_final_draft_never_breaks_closure(tiny_loaded, prefix, suffix, mode):
    final = complete(engine_for(tiny_loaded, mode=mode), prefix, suffix)[-1]

    assert final.final
    assert syntax_check.check(prefix, final.text, suffix, "python").valid


@pytest.mark.parametrize(("prefix", "suffix"), CLOSURE_CASES)
def test_final_draft_never_breaks_closure_even_without_repair_rounds(tiny_loaded, prefix, suffix):
    final = complete(engine_for(tiny_loaded, mode="multi-line", repair_rounds=0), prefix, suffix)[-1]

    assert syntax_check.check(prefix, final.text, suffix, "python").valid


def test_repair_rounds_continue_the_step_count(tiny_loaded):
    engine = engine_for(tiny_loaded, mode="multi-line", repair_rounds=3)
    drafts = complete(engine, "x = {'a': (", ")}\n")
    steps = [draft.step for draft in drafts if not draft.final]

    assert steps == list(range(1, len(steps) + 1))


@pytest.fixture
def closing_parens(tiny_loaded):
    """Makes the model write ")" in every slot: a draft that breaks closure however often it is repaired."""
    paren = tiny_loaded.tokenizer.encode(")", add_special_tokens=False)[0]

    def hook(module, args, output):
        output[..., paren] += 1e3

    handle = tiny_loaded.model.lm_head.register_forward_hook(hook)
    yield
    handle.remove()


def test_a_draft_that_breaks_closure_is_repaired_before_it_is_cut(tiny_loaded, closing_parens):
    def final(repair_rounds: int) -> Draft:
        engine = engine_for(tiny_loaded, mode="multi-line", repair_rounds=repair_rounds)
        return complete(engine, "x = (", ")\n")[-1]

    unrepaired, repaired = final(0), final(2)

    assert unrepaired.evidence.cut and repaired.evidence.cut
    assert repaired.step > unrepaired.step  # the repair rounds' passes came before the cut


@pytest.mark.parametrize("noise", ["mask", "uniform"])
def test_a_repair_round_noises_the_bad_slots_with_the_checkpoints_own_noise(tiny_loaded, noise):
    loaded = dataclasses.replace(tiny_loaded, spec=dataclasses.replace(tiny_loaded.spec, noise=noise))
    engine = engine_for(loaded)
    context = encode_context(
        loaded.tokenizer, loaded.ids.bos, "x = (", ")\n", loaded.spec.max_prefix, loaded.spec.suffix_head
    )
    layout = canvas_layout.completion_canvas(context.suffix_ids, 8, loaded.spec.suffix_head, loaded.ids)
    gap = layout.gaps[0]
    word = loaded.tokenizer.encode("value", add_special_tokens=False)[0]
    argmax = torch.tensor([layout.tokens]).clone()
    argmax[0, gap.start : gap.stop] = word
    torch.manual_seed(0)

    start = engine._renoise_from(argmax, layout, context, bad_offset=0)  # the first slot already breaks it

    noised = start[0, gap.start : gap.stop]
    assert (noised == loaded.ids.mask).all() == (noise == "mask")
    assert (noised != loaded.ids.mask).any() == (noise == "uniform")


def test_brackets_only_check_when_the_language_is_unknown(tiny_loaded):
    final = complete(engine_for(tiny_loaded, mode="multi-line"), "f(a, [", "])\n", language=None)[-1]

    assert syntax_check.check("f(a, [", final.text, "])\n", None).valid


# Single-line and multi-line


@pytest.fixture
def newline_at_third_slot(tiny_loaded):
    """The tiny model, made to put a newline in the third gap slot of every draft."""
    vocabulary = [tiny_loaded.tokenizer.decode([i]) for i in range(len(tiny_loaded.tokenizer))]
    newlines = torch.tensor([i for i, text in enumerate(vocabulary) if text == "\n"])

    def hook(module, args, output):
        # The lm_head reads the whole canvas (batch, canvas, hidden) or the slots that need logits
        # (slots, hidden), gap slots first: either way the third gap slot is row 2 of the slot dimension.
        if output.shape[-2] > 2:
            output[..., 2, newlines] += 1e3

    handle = tiny_loaded.model.lm_head.register_forward_hook(hook)
    yield tiny_loaded
    handle.remove()


def test_multi_line_drafts_keep_newlines(newline_at_third_slot):
    drafts = complete(engine_for(newline_at_third_slot, mode="multi-line", denoise=ALL_SLOTS), "x = foo(", ")\n")

    assert any("\n" in draft.text for draft in drafts if not draft.final)


def test_single_line_mode_never_returns_a_newline(newline_at_third_slot):
    drafts = complete(engine_for(newline_at_third_slot, mode="single-line"), "x = foo(", ")\n")

    assert drafts
    assert not any("\n" in draft.text for draft in drafts)


def test_auto_mode_is_single_line_after_code_on_the_cursor_line(newline_at_third_slot):
    drafts = complete(engine_for(newline_at_third_slot, mode="auto"), "x = foo(", ")\n")

    assert not any("\n" in draft.text for draft in drafts)


def test_auto_mode_is_multi_line_on_an_empty_line(newline_at_third_slot):
    drafts = complete(engine_for(newline_at_third_slot, mode="auto", denoise=ALL_SLOTS), "def f(x):\n    ", "\n")

    assert any("\n" in draft.text for draft in drafts if not draft.final)


def seeded_final(loaded, **settings) -> Draft:
    torch.manual_seed(0)
    return complete(engine_for(loaded, denoise=ALL_SLOTS, **settings), "x = foo(", ")\n")[-1]


def test_one_line_wanted_stops_once_the_revealed_slots_hold_the_line_end(newline_at_third_slot):
    stopped = seeded_final(newline_at_third_slot, mode="single-line")
    run_on = seeded_final(newline_at_third_slot, mode="single-line", stop_at_line_end=False)

    assert stopped.text == run_on.text  # the passes it saved only decided what the cut drops
    assert stopped.step < run_on.step


def test_several_lines_wanted_never_stop_at_a_line_end(newline_at_third_slot):
    wanted = seeded_final(newline_at_third_slot, mode="multi-line")
    run_on = seeded_final(newline_at_third_slot, mode="multi-line", stop_at_line_end=False)

    assert wanted.step == run_on.step


# Cancellation


def test_cancelled_before_the_first_step_yields_no_draft(tiny_loaded):
    assert complete(engine_for(tiny_loaded), "print(", ")\n", cancelled=lambda: True) == []


def test_cancelled_mid_way_yields_no_final_draft(tiny_loaded):
    engine, drafts = engine_for(tiny_loaded), []
    for draft in engine.complete(InfillRequest("print(", ")\n", "python"), cancelled=lambda: len(drafts) >= 2):
        drafts.append(draft)

    assert len(drafts) == 2
    assert not any(draft.final for draft in drafts)


def test_cancelled_once_the_last_pass_ended_yields_no_final_draft(tiny_loaded):
    engine = engine_for(tiny_loaded)
    torch.manual_seed(0)
    steps = len(complete(engine, "print(", ")\n")) - 1
    drafts = []
    torch.manual_seed(0)
    for draft in engine.complete(InfillRequest("print(", ")\n", "python"), cancelled=lambda: len(drafts) >= steps):
        drafts.append(draft)

    assert len(drafts) == steps
    assert not any(draft.final for draft in drafts)


# Warm start


def test_warm_start_from_a_previous_draft_completes(tiny_loaded):
    engine = engine_for(tiny_loaded)
    previous = complete(engine, "print(", ")\n")[-1].text

    drafts = complete(engine, "print(", ")\n", start_text=previous or "x")

    assert drafts[-1].final
    assert syntax_check.check("print(", drafts[-1].text, ")\n", "python").valid


def test_warm_start_inside_a_word_completes(tiny_loaded):
    drafts = complete(engine_for(tiny_loaded), "result = valu", "", start_text="e + 1")

    assert drafts[-1].final


def test_warm_start_longer_than_the_gap_is_ignored(tiny_loaded):
    drafts = complete(engine_for(tiny_loaded), "print(", ")\n", start_text="value, " * 50)

    assert drafts[-1].final


# Construction


def test_engine_refuses_a_checkpoint_not_trained_on_the_canvas(tiny_loaded):
    plain = LoadedModel(tiny_loaded.model, tiny_loaded.tokenizer, None, None, "plain")

    with pytest.raises(ValueError, match="plain"):
        InfillEngine(plain)


def test_max_gap_tokens_overrides_the_trained_gap_size(tiny_loaded):
    canvas_lengths = []

    def record(module, args, kwargs):
        canvas_lengths.append(kwargs["decoder_input_ids"].shape[-1])

    handle = tiny_loaded.model.model.decoder.register_forward_pre_hook(record, with_kwargs=True)
    try:
        complete(engine_for(tiny_loaded, max_gap_tokens=3), "x = ", "\n")
    finally:
        handle.remove()

    assert set(canvas_lengths) == {3 + tiny_loaded.spec.suffix_head}


# A canvas that starts short and grows


@pytest.fixture
def canvas_lengths(tiny_loaded):
    """The canvas length of every decoder pass."""
    lengths = []

    def record(module, args, kwargs):
        lengths.append(kwargs["decoder_input_ids"].shape[-1])

    handle = tiny_loaded.model.model.decoder.register_forward_pre_hook(record, with_kwargs=True)
    yield lengths
    handle.remove()


@pytest.fixture
def end_logit(tiny_loaded, ids):
    """Adds a value to END's logit in every slot (+: the model writes END at once, -: never)."""
    shift = {"value": 0.0}

    def hook(module, args, output):
        output[..., ids.end] += shift["value"]

    handle = tiny_loaded.model.lm_head.register_forward_hook(hook)
    yield shift
    handle.remove()


def test_a_first_gap_filled_without_end_grows_to_the_full_gap_keeping_its_tokens(
    tiny_loaded, canvas_lengths, end_logit
):
    end_logit["value"] = -1e3
    head, first = tiny_loaded.spec.suffix_head, 4

    drafts = complete(engine_for(tiny_loaded, first_gap_tokens=first, denoise=ALL_SLOTS), "x = ", "\n")

    assert canvas_lengths[0] == first + head and canvas_lengths[-1] == tiny_loaded.spec.gap_slots + head
    grown = canvas_lengths.index(tiny_loaded.spec.gap_slots + head)
    short_text = drafts[grown - 1].text  # the last draft of the short canvas: every slot revealed
    assert short_text and all(draft.text.startswith(short_text) for draft in drafts[grown:-1])


def test_a_first_gap_closed_by_end_never_grows(tiny_loaded, canvas_lengths, end_logit):
    end_logit["value"] = 1e3
    head, first = tiny_loaded.spec.suffix_head, 4

    complete(engine_for(tiny_loaded, first_gap_tokens=first, min_insertion_tokens=0, denoise=ALL_SLOTS), "x = ", "\n")

    assert canvas_lengths and set(canvas_lengths) == {first + head}


def test_a_warm_start_gets_the_full_gap_from_the_first_step(tiny_loaded, canvas_lengths):
    engine = engine_for(tiny_loaded, first_gap_tokens=4, denoise=FAST)

    complete(engine, "x = ", "\n", start_text="alpha beta gamma delta")

    assert set(canvas_lengths) == {tiny_loaded.spec.gap_slots + tiny_loaded.spec.suffix_head}


# Length


def test_default_insertion_is_never_empty(tiny_loaded):
    engine = engine_for(tiny_loaded, mode="multi-line")
    for prefix, suffix in [("x = ", "\n"), ("def f(a", "):\n    pass\n"), ("print(", ")\n")]:
        first_step = complete(engine, prefix, suffix)[0]
        assert first_step.text != ""


def test_the_engine_keeps_no_completion_between_requests(tiny_loaded):
    """Typing along the previous completion changes nothing by itself: a warm start is the caller's
    (diffusion_infill.lsp.completion.without_run.rest), so the engine answers as a fresh one does."""
    engine = engine_for(tiny_loaded)
    prefix, first = next(
        (prefix, text)
        for prefix in ("x = ", "print(", "values = [", "def f(")
        if len(text := complete(engine, prefix, "\n")[-1].text) >= 2
    )
    typed = prefix + first[:-2]  # a short rest: short enough to warm-start the gap
    torch.manual_seed(0)
    after = [draft.text for draft in complete(engine, typed, "\n")]
    torch.manual_seed(0)
    fresh = [draft.text for draft in complete(engine_for(tiny_loaded), typed, "\n")]
    assert after == fresh


# The sampler's settings tuned for the checkpoint, and where the passes went


def test_the_engine_takes_the_checkpoints_sampler_json_where_settings_leave_it(tiny_loaded, tmp_path):
    save_tuning(tmp_path, {"entropy_bound": 3.0, "stable_insertion": 2}, "test")
    tuned = InfillEngine(dataclasses.replace(tiny_loaded, source=str(tmp_path)), EngineSettings())
    chosen = InfillEngine(
        dataclasses.replace(tiny_loaded, source=str(tmp_path)),
        EngineSettings(denoise=DenoiseSettings(entropy_bound=0.2)),
    )

    assert (tuned.settings.denoise.entropy_bound, tuned.settings.denoise.stable_insertion) == (3.0, 2)
    assert (chosen.settings.denoise.entropy_bound, chosen.settings.denoise.stable_insertion) == (0.2, 2)


def test_the_final_draft_says_where_its_passes_went(tiny_loaded):
    drafts = complete(engine_for(tiny_loaded, denoise=ALL_SLOTS), "x = ", "\n")

    counts = drafts[-1].passes
    assert counts.passes == drafts[-1].step == len(drafts) - 1
    assert counts.one_token + counts.without_reveal <= counts.passes
    assert all(draft.passes is None for draft in drafts[:-1])
