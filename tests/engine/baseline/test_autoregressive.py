"""The autoregressive baseline (diffusion_infill.engine.baseline.autoregressive): the same context, drafts and
closure rule as the diffusion engine, one token per forward pass, greedy."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch
from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

from diffusion_infill.engine.baseline.autoregressive import AutoregressiveEngine, FimSpec, fim_prompt, prompt_lookup
from diffusion_infill.engine.completion.prefix import encode_context
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings

CLOSURE_CASES = [
    pytest.param("result = compute(value", "", id="unclosed-call"),
    pytest.param("print(", ")\n", id="auto-paired-paren"),
    pytest.param("x = {'a': (", ")}\n", id="nested-pairs"),
    pytest.param('name = "', '"\n', id="open-string"),
    pytest.param("", "", id="empty-file"),
]


@pytest.fixture
def engine(tiny_fim):
    return AutoregressiveEngine(tiny_fim, EngineSettings(mode="multi-line"))


def test_the_prompt_is_prefix_suffix_middle_in_that_order(tiny_fim):
    ids = tiny_fim.ids
    assert fim_prompt([10, 11], [20], ids) == [ids.prefix, 10, 11, ids.suffix, 20, ids.middle]


def test_one_draft_per_forward_pass_then_one_final(engine):
    drafts = list(engine.complete(InfillRequest("def area(w, h):\n    return ", "\n", "python")))
    assert drafts[-1].final and [d.final for d in drafts].count(True) == 1
    steps = [d.step for d in drafts[:-1]]
    assert steps == list(range(1, len(steps) + 1))
    assert drafts[-1].step <= engine.loaded.spec.max_middle + 1


def test_decoding_is_greedy_so_the_same_request_gives_the_same_text(engine):
    request = InfillRequest("import os\nprint(os.", ")\n", "python")
    assert list(engine.complete(request))[-1].text == list(engine.complete(request))[-1].text


def test_the_spec_round_trips_its_context_tokens(tmp_path):
    FimSpec(context_tokens=32).save(tmp_path)

    assert FimSpec.load(tmp_path).context_tokens == 32


def test_a_spec_saved_before_context_tokens_loads_with_none(tmp_path):
    (tmp_path / "fim.json").write_text('{"max_prefix": 128, "suffix_head": 8, "max_middle": 24}')

    assert FimSpec.load(tmp_path).context_tokens == 0


def test_the_prompt_holds_the_context_lines_the_spec_asks_for(tiny_fim):
    prefix = "TARGET_SETTING = 1\n" + "".join(f"filler_{n} = {n}\n" for n in range(300)) + "x = TARGET_SETTING"
    loaded = dataclasses.replace(tiny_fim, spec=dataclasses.replace(tiny_fim.spec, context_tokens=32))
    prompts = []
    hook = loaded.model.register_forward_pre_hook(
        lambda _module, _args, kwargs: prompts.append(kwargs["input_ids"]), with_kwargs=True
    )
    try:
        next(AutoregressiveEngine(loaded, EngineSettings()).complete(InfillRequest(prefix, "\n", "python")))
    finally:
        hook.remove()
    ids, spec = loaded.ids, loaded.spec
    context = encode_context(
        loaded.tokenizer, ids.bos, prefix, "\n", spec.max_prefix, spec.suffix_head, context_tokens=32
    )

    assert (
        context.prefix_ids
        != encode_context(loaded.tokenizer, ids.bos, prefix, "\n", spec.max_prefix, spec.suffix_head).prefix_ids
    )
    assert prompts[0][0].tolist() == fim_prompt(context.prefix_ids, context.suffix_ids, ids)


def test_the_first_token_is_the_argmax_of_the_fim_prompt(tiny_fim, engine):
    request = InfillRequest("value = 1 + ", "\n", "python")
    spec, ids = tiny_fim.spec, tiny_fim.ids
    context = encode_context(
        tiny_fim.tokenizer, ids.bos, request.prefix, request.suffix, spec.max_prefix, spec.suffix_head
    )
    with torch.no_grad():
        logits = tiny_fim.model(torch.tensor([fim_prompt(context.prefix_ids, context.suffix_ids, ids)])).logits
    logits[0, -1, ids.end] = -float("inf")  # END is kept out of the first position (min_insertion_tokens)
    logits[0, -1, sorted(tiny_fim.tokenizer.added_tokens_decoder)] = -float("inf")  # special tokens are not text
    expected = tiny_fim.tokenizer.decode([int(logits[0, -1].argmax())])
    first = next(engine.complete(request))
    assert first.text == expected


def test_special_tokens_other_than_end_are_never_written(tiny_fim, engine):
    def prefer_fim_prefix(module, args, output):
        output.logits[..., tiny_fim.ids.prefix] += 100.0  # a model that would rather open a new FIM prompt
        return output

    hook = tiny_fim.model.register_forward_hook(prefer_fim_prefix)
    try:
        drafts = list(engine.complete(InfillRequest("value = 1 + ", "\n", "python")))
    finally:
        hook.remove()
    assert drafts[-1].text and not any("<fim_prefix>" in draft.text for draft in drafts)


@pytest.mark.parametrize(("prefix", "suffix"), CLOSURE_CASES)
def test_the_final_text_never_breaks_closure(engine, prefix, suffix):
    final = list(engine.complete(InfillRequest(prefix, suffix, "python")))[-1]
    assert final.valid


def test_single_line_mode_stops_at_the_end_of_the_line(tiny_fim):
    engine = AutoregressiveEngine(tiny_fim, EngineSettings(mode="single-line"))
    drafts = list(engine.complete(InfillRequest("for item in items:\n    total = total + it", "\n", "python")))
    assert all("\n" not in d.text for d in drafts)


def test_a_healed_word_starts_with_a_token_that_continues_it(tiny_fim, engine):
    """The cursor inside `appe`: the last token is taken back and the first generated token
    must start with its text, so the insertion continues the word instead of restarting."""
    prefix = "items = []\nitems.appe"
    spec, ids = tiny_fim.spec, tiny_fim.ids
    context = encode_context(tiny_fim.tokenizer, ids.bos, prefix, "\n", spec.max_prefix, spec.suffix_head)
    assert context.healed and prefix.endswith(context.healed)
    prompt = fim_prompt(context.prefix_ids, context.suffix_ids, ids)
    options = engine._generate_options(context, len(prompt), prefix)
    generated = tiny_fim.model.generate(torch.tensor([prompt]), **options).sequences
    assert tiny_fim.tokenizer.decode(generated[0, len(prompt) : len(prompt) + 1]).startswith(context.healed)


def test_cancelling_stops_generation_without_a_final_draft(engine):
    drafts = []
    for draft in engine.complete(InfillRequest("x = [", "]\n", "python"), cancelled=lambda: bool(drafts)):
        drafts.append(draft)
    assert drafts and not any(d.final for d in drafts)


def test_prompt_lookup_checks_draft_tokens_from_the_prompt_and_keeps_the_greedy_result(tiny_fim):
    """With line drafts on, generate() guesses the tokens that followed the last ones earlier in the
    prompt and checks them in one pass: fewer forward passes for a repeated line, the same text."""
    line = "result = compute(alpha, beta, gamma)\n"
    request = InfillRequest(line * 3 + "result = compute(al", "\n", "python")
    plain = list(
        AutoregressiveEngine(tiny_fim, EngineSettings(mode="single-line", document_drafts=False)).complete(request)
    )
    looked_up = list(AutoregressiveEngine(tiny_fim, EngineSettings(mode="single-line")).complete(request))

    assert looked_up[-1].text == plain[-1].text
    assert looked_up[-1].step <= plain[-1].step
    assert looked_up[-1].confidence == pytest.approx(plain[-1].confidence, abs=1e-6)


def test_prompt_lookup_writes_a_repeated_line_in_fewer_passes_with_the_trained_baseline():
    from diffusion_infill.bench.compare import BASELINE_MODEL
    from diffusion_infill.engine.factory import load_any

    loaded = load_any(str(BASELINE_MODEL))
    line = "    self.assertEqual(parse_header(value), expected_header)\n"
    request = InfillRequest("class T:\n  def test(self):\n" + line * 3 + "    self.assertEqual(pa", "\n", "python")
    plain, looked_up = (
        list(AutoregressiveEngine(loaded, settings).complete(request))[-1]
        for settings in (EngineSettings(mode="single-line", document_drafts=drafts) for drafts in (False, True))
    )

    assert looked_up.text == plain.text and plain.text.startswith("rse_header(value)")
    assert looked_up.step < plain.step


@pytest.mark.parametrize("seed", range(40))
def test_the_lookup_search_guesses_what_transformers_prompt_lookup_guesses(seed):
    """engine.baseline.autoregressive.prompt_lookup is transformers' n-gram search, pinned to it here."""
    rng = random.Random(seed)
    ids = [rng.randrange(4) for _ in range(rng.randrange(2, 30))]  # few distinct tokens: many matches
    max_ngram, tokens = rng.randrange(1, 5), rng.randrange(1, 12)
    generator = PromptLookupCandidateGenerator(
        num_output_tokens=tokens, max_matching_ngram_size=max_ngram, max_length=99
    )
    candidates, _ = generator.get_candidates(torch.tensor([ids]))

    assert prompt_lookup(ids, max_ngram, tokens)[1] == candidates[0, len(ids) :].tolist()


def test_the_lookup_search_says_how_long_a_tail_matched():
    assert prompt_lookup([5, 6, 7, 1, 5, 6], 3, 4) == (2, [7, 1, 5, 6])
    assert prompt_lookup([5, 6, 7, 1, 2, 6], 3, 4) == (1, [7, 1, 2, 6])
    assert prompt_lookup([5, 6, 7, 8], 3, 4) == (0, [])


def _passes_checking_guesses(engine: AutoregressiveEngine, request: InfillRequest) -> int:
    """Forward passes after the prefill that read more than one new token: prompt lookup's checks."""
    lengths = []
    hook = engine.loaded.model.register_forward_pre_hook(
        lambda _module, _args, kwargs: lengths.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    try:
        list(engine.complete(request))
    finally:
        hook.remove()
    return sum(length > 1 for length in lengths[1:])


REPEATED_LINE = "    self.assertEqual(parse_header(value), expected_header)\n"


@pytest.mark.parametrize(
    ("prefix", "looked_up"),
    [
        pytest.param("import os\n\n\ndef area(width, height):\n    return wid", False, id="nothing-repeated"),
        # one earlier copy: the tail matches 5 tokens, and lookup would cost more than it saves (9 passes to 5)
        pytest.param("class T:\n  def test(self):\n" + REPEATED_LINE + "    self.assertEqual(pa", False, id="once"),
        pytest.param("class T:\n  def test(self):\n" + REPEATED_LINE * 2 + "    self.assertEqual(pa", True, id="twice"),
    ],
)
def test_prompt_lookup_runs_only_where_the_prompt_repeats_the_tokens_before_the_cursor(prefix, looked_up):
    from diffusion_infill.bench.compare import BASELINE_MODEL
    from diffusion_infill.engine.factory import load_any

    loaded = load_any(str(BASELINE_MODEL))
    request = InfillRequest(prefix, "\n", "python")
    default = AutoregressiveEngine(loaded, EngineSettings(mode="single-line"))
    always = AutoregressiveEngine(loaded, EngineSettings(mode="single-line", prompt_lookup_always=True))

    assert bool(_passes_checking_guesses(default, request)) == looked_up
    assert _passes_checking_guesses(always, request)  # transformers' one-token matches find guesses anyway
