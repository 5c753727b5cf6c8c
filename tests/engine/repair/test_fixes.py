"""Fix JSON / Markdown / regenerate: diffusion candidates on a multi-gap canvas (tiny random
model: junk text, but the contracts hold), validation, and the choice among candidates."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from diffusion_infill.engine.repair import fixes, markdown_rules
from diffusion_infill.engine.repair.diffusion import DiffusionRepairer, RepairSettings
from diffusion_infill.engine.repair.fixes import (
    Candidate,
    Fixer,
    Surroundings,
    admissible,
    edit_size,
    markdown_validator,
    rank,
    rank_json,
)
from diffusion_infill.engine.repair.jsonfix import added, comments, strip_jsonc, structural_repair
from diffusion_infill.engine.repair.markdown_rules import fix, problems
from diffusion_infill.engine.repair.spans import Span, merge


@pytest.fixture(scope="module")
def repairer(tiny_loaded) -> DiffusionRepairer:
    return DiffusionRepairer(tiny_loaded, RepairSettings(samples=2))


def test_known_text_between_gaps_is_kept_verbatim(repairer):
    text = '{"alpha": 1,, "beta": [2 3]}'
    spans = [Span(text.index(",,"), text.index(",,") + 2), Span(text.index("2 3") + 1, text.index("2 3") + 2)]
    candidates = repairer.fill("", text, spans, "")
    assert len(candidates) == 2
    for candidate in candidates:
        assert candidate.startswith('{"alpha": 1')
        middle = candidate[len('{"alpha": 1') :]
        assert ' "beta": [2' in middle and middle.endswith("3]}")


def test_same_selection_same_candidates(repairer):
    text = "[1, 2,, 3]"
    assert repairer.fill("x", text, [Span(5, 7)], "") == repairer.fill("x", text, [Span(5, 7)], "")


def test_a_canvas_longer_than_the_limit_gives_no_candidates(tiny_loaded):
    repairer = DiffusionRepairer(tiny_loaded, RepairSettings(max_canvas=8))
    assert repairer.fill("", '{"a": [1, 2, 3, 4, 5, 6, 7]}', [Span(1, 2)], "") == []


def test_spans_merge_when_touching_and_down_to_the_gap_limit():
    assert merge([Span(5, 6), Span(0, 2), Span(2, 3)], max_gaps=8) == [Span(0, 3), Span(5, 6)]
    assert merge([Span(0, 1), Span(10, 11), Span(13, 14)], max_gaps=2) == [Span(0, 1), Span(10, 14)]


def test_edit_size_counts_changed_characters():
    assert edit_size('{"a": 1,}', '{"a": 1}') == 1


def test_choice_prefers_keeping_content_then_the_smallest_edit():
    original = '{"a": 1, "b": 2,}'
    candidates = [
        Candidate('{"a": 1}', "diffusion"),
        Candidate('{"a": 1, "b": 2}', "structure"),
        Candidate('{"a": 1, "b": 2 ', "diffusion"),
    ]

    def lost(text: str) -> int:
        return 2 - len(json.loads(text))

    ranked = rank(original, candidates, lambda text: text.strip().endswith("}"), lost)
    assert ranked[0] == Candidate('{"a": 1, "b": 2}', "structure")


def test_fix_json_validates_every_candidate_and_keeps_all_keys(repairer):
    text = "{'id': 7, tags: ['a' 'b'], ok: True, // note\n}"
    result = Fixer(repairer).fix_json(text, Surroundings("before\n", "\nafter"))
    assert result.fixed and result.tried >= 2  # the structural candidate and diffusion ones
    assert json.loads(result.text) == {"id": 7, "tags": ["a", "b"], "ok": True}


def test_fix_json_without_any_valid_candidate_changes_nothing(repairer):
    text = ":,]"  # no value at all: the structure repair declines, diffusion gets no room
    result = Fixer(DiffusionRepairer(repairer.loaded, RepairSettings(max_canvas=4))).fix_json(text)
    assert not result.fixed and result.text == text
    assert "not JSON" in result.reason


def test_fix_jsonc_keeps_every_comment_where_fix_json_drops_them(repairer):
    text = '{\n  // indentation\n  "tabs": [2, 4,] /* spaces */\n  "wrap": True,\n'
    result = Fixer(repairer).fix_jsonc(text, Surroundings("", "\n"))
    assert result.fixed and comments(result.text) == comments(text)
    assert json.loads(strip_jsonc(result.text)) == {"tabs": [2, 4], "wrap": True}
    assert comments(Fixer(None).fix_json(text).text) == Counter()


def test_valid_jsonc_is_not_fixed():
    result = Fixer(None).fix_jsonc('{"a": [1,], // fine in JSONC\n}')
    assert not result.fixed and result.reason == "the selection is already valid JSONC"


def test_valid_json_is_not_fixed():
    result = Fixer(None).fix_json('{"a": 1}')
    assert not result.fixed and result.reason == "the selection is already valid JSON"


def test_fix_markdown_closes_the_table_and_the_fence(repairer):
    text = "| a | b |\n|---|---|\n| 1 |\n\n```\ncode\n"
    result = Fixer(repairer).fix_markdown(text)
    assert result.fixed and problems(result.text) == []
    assert result.text.startswith("| a | b |\n|---|---|\n| 1 |")


def test_regenerate_either_returns_a_closure_valid_replacement_or_says_why(repairer):
    around = Surroundings("def area(w, h):\n    return ", "\n", "python")
    result = Fixer(repairer).regenerate("w * h", around)
    assert result.fixed or result.reason
    if not result.fixed:
        assert result.text == "w * h"


def test_regenerate_needs_a_canvas_model_and_says_why_there_is_none():
    result = Fixer(None, "the model could not be loaded").regenerate("x", Surroundings())
    assert not result.fixed and result.reason == "cannot regenerate: the model could not be loaded"


def test_a_markdown_candidate_that_dissolves_the_table_is_not_valid():
    text = "| a | b |\n|---|---|\n| 1 |\n"
    valid = markdown_validator(fix(text))
    assert valid(fix(text))
    assert not valid("| a | b |\n| 1 |\n")  # passes the rules only because the delimiter row is gone


def test_regenerate_starts_from_the_renoised_selection_and_is_repeatable(repairer):
    before, selection, after = "total = ", "price * count", "\nprint(total)\n"
    first = repairer.regenerate(before, selection, after)
    assert len(first) == repairer.settings.samples and all(isinstance(text, str) for text in first)
    assert repairer.regenerate(before, selection, after) == first


def test_complete_table_writes_only_inside_the_empty_cells_or_says_why(repairer):
    text = "| name | age | city |\n|---|---|---|\n| Alice | 30 | Paris |\n| Carol\n| Dan | | Rome |\n"
    result = Fixer(repairer).complete_table(text)
    padded = markdown_rules.pad_tables(text)
    if not result.fixed:
        assert result.text == text and result.reason.endswith("empty cells between their pipes")
        return
    assert markdown_rules.table_shapes(result.text) == markdown_rules.table_shapes(padded) == [(5, 3)]
    assert len(markdown_rules.empty_cells(result.text)) < len(markdown_rules.empty_cells(padded)) == 3
    assert Counter(_words(text)) - Counter(_words(result.text)) == Counter()
    rows = result.text.splitlines()
    assert rows[:3] == padded.splitlines()[:3] and rows[3].startswith("| Carol|") and rows[4].startswith("| Dan |")


def test_complete_table_needs_an_empty_or_missing_cell():
    result = Fixer(None).complete_table("| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert not result.fixed and result.reason == "cannot complete the table: no model is loaded"
    assert markdown_rules.empty_cells("| a | b |\n|---|---|\n| 1 | 2 |\n") == []


def test_complete_table_says_when_there_is_nothing_to_complete(repairer):
    result = Fixer(repairer).complete_table("| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert not result.fixed and result.reason == "no table with an empty or missing cell in the selection"


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def test_a_model_candidate_may_not_add_a_value_a_number_or_a_key_only_null():
    original = '{"a": [1, 2, ...], "b": }'
    candidates = [
        Candidate('{"a": [1, 2, 3], "b": null}', "diffusion"),  # a number where `...` stood
        Candidate('{"a": [1, 2], "b": 2}', "diffusion"),  # a missing value filled with a number
        Candidate('{"a": [1, 2], "b": null, "c": null}', "diffusion"),  # a key
        Candidate('{"a": [1, 2], "b": "x"}', "diffusion"),  # a string
        Candidate('{"a": [1, 2], "b": []}', "diffusion"),  # an array for a missing value
        Candidate('{"a": [1, 2], "b": null}', "diffusion"),
        Candidate('{"a": [1, 2], "b": null}', "structure"),
    ]

    def adds(text: str, candidate: str) -> Counter:
        return added(text, candidate, structural_repair(text))

    assert admissible(original, candidates, adds) == candidates[5:]


# What the model's candidates invented on damage from other projects' test suites (issue 27), each
# beside the deterministic repair: (broken text, the model's candidate, what must be chosen).
INVENTED = {
    "an empty array for a missing value": ('{"a":}', '{"a":[]}', '{"a":null}'),
    "an empty array after a lone sign": ('{"a":-', '{"a":[]}', '{"a":-0}'),  # -0 as jsonrepair writes it
    "a number where an ellipsis stood": ("[1, 2, ...]", "[1, 2, 3]", "[1, 2 ]"),
    "a list read as a decimal": ("1,2,3", "1.3", "[1,2,3]"),
    "digits completing a \\u escape": ('{"u": "\\u12', '{"u": "\\u1234"}', '{"u": ""}'),  # the cut escape dropped
    "a character inside a string": ('{"s": "abc', '{"s":"abc!"}', '{"s": "abc"}'),
    "a key for a missing comma": ('{"i":1{"i":2}', '{"i":1,"":{"i":2}}', '[{"i":1},{"i":2}]'),
}


@pytest.mark.parametrize("kind", list(INVENTED))
def test_a_model_candidate_holding_what_the_text_lacks_is_never_chosen(kind):
    text, invented, expected = INVENTED[kind]
    assert structural_repair(text) == expected
    ranked = rank_json(text, [Candidate(structural_repair(text), "structure"), Candidate(invented, "diffusion")])
    assert [candidate.text for candidate in ranked] == [expected]


def test_a_model_candidate_that_only_adds_structure_stays_in_the_running():
    text = '{"a": [1, 2 3]'
    candidates = [Candidate(structural_repair(text), "structure"), Candidate('{"a": [1, 2,3]}', "diffusion")]
    assert {candidate.source for candidate in rank_json(text, candidates)} == {"structure", "diffusion"}


def test_a_markdown_model_candidate_may_not_add_words():
    text = "| a | b |\n|---|---|\n| 1 |\n"
    candidates = [
        Candidate("| a | b |\n|---|---|\n| 1 | two |\n", "diffusion"),
        Candidate("| a | b |\n|---|---|\n| 1 |  |\n", "diffusion"),
    ]

    def changes(original: str, candidate: str) -> Counter:
        return markdown_rules.model_changes(original, fix(original), candidate)

    assert admissible(text, candidates, changes) == candidates[1:]


def test_the_model_never_writes_a_fence_language_and_never_changes_code():
    text = "~~~\nx = 1\n~~~\n"
    assert fix(text) == "~~~text\nx = 1\n~~~\n"
    assert markdown_rules.model_changes(text, fix(text), "~~~ |\nx = 1\n~~~\n") == Counter({"(a fence language)": 1})
    indented = "Some **bold\n\n    x  =  1\n"
    assert markdown_rules.model_changes(indented, fix(indented), "Some **bold**\n\n    x = 1\n") == Counter(
        {"(a code block)": 1}
    )


def test_fix_markdown_chooses_the_deterministic_fence_language_over_the_models():
    text = "~~~\nx = 1\n~~~\n"
    candidates = [Candidate(fix(text), "structure"), Candidate("~~~ |\nx = 1\n~~~\n", "diffusion")]

    def changes(original: str, candidate: str) -> Counter:
        return markdown_rules.model_changes(original, fix(original), candidate)

    ranked = rank(text, admissible(text, candidates, changes), markdown_validator(fix(text)), lambda _: 0)
    assert ranked == candidates[:1]  # the model's `|` is the smaller edit: without the filter it would win


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2, ...], "b": }',
        "{message: hello big world, n: 2,}",
        '{"items": [1 2 3], "name": "x"',
        "[true, None, 'q',, 4]",
    ],
)
def test_fix_json_never_returns_content_the_text_lacks(repairer, text):
    result = Fixer(repairer).fix_json(text)
    assert result.fixed and not added(text, result.text, structural_repair(text))


def test_special_tokens_never_reach_a_candidate(repairer):
    text = '{"alpha": [1, 2,, 3], "beta": {"x" 1}}'
    spans = [Span(index, index + 1) for index in range(2, len(text) - 2, 5)]
    specials = repairer.special_texts
    assert "<end>" in specials and "<eos>" in specials and "<mask>" in specials
    for seed in range(3):
        candidates = DiffusionRepairer(repairer.loaded, RepairSettings(samples=4, extra_slots=12, seed=seed)).fill(
            "", text, spans, ""
        )
        assert candidates and not [candidate for candidate in candidates if any(s in candidate for s in specials)]


def test_without_model_fixes_json_and_markdown_take_the_rules_alone_but_the_table_still_asks_the_model(repairer):
    broken_json, broken_markdown = '{"a": 1,, "b": [2 3]}', "| a | b |\n|---|---|\n| 1 |\n\nsome **bold\n"
    rules_only = Fixer(repairer, model_fixes=False)
    assert rules_only.fix_json(broken_json).tried == 1 and rules_only.fix_markdown(broken_markdown).tried == 1
    assert Fixer(repairer).fix_json(broken_json).tried > 1 and Fixer(repairer).fix_markdown(broken_markdown).tried > 1
    assert rules_only.complete_table("| a | b |\n|---|---|\n| 1 |   |\n").tried > 0


def test_rank_counts_what_candidates_lose_only_when_two_are_valid():
    def weighed(_: str) -> int:
        raise AssertionError("a lone valid candidate was weighed")

    candidates = [Candidate("b", "structure"), Candidate("c", "diffusion")]
    assert rank("a", candidates, lambda text: text == "b", weighed) == [Candidate("b", "structure")]


def test_a_fix_without_the_model_diffs_nothing(monkeypatch):
    diffed = []
    real = fixes.diff
    monkeypatch.setattr(fixes, "diff", lambda before, after: diffed.append(after) or real(before, after))
    text = "[" + '{"id": 1, "tags": ["a" "b"]}, ' * 200 + "]"
    assert Fixer(None).fix_json(text).fixed and Fixer(None).fix_markdown("```\ncode\n").fixed
    assert diffed == []  # neither the model's gaps nor a tie between candidates needed one


def test_the_deterministic_fix_is_diffed_once_for_the_models_gaps_and_the_ranking(repairer, monkeypatch):
    diffed = []
    real = fixes.diff
    monkeypatch.setattr(fixes, "diff", lambda before, after: diffed.append(after) or real(before, after))
    text = "{'id': 7, tags: ['a' 'b'], ok: True}"
    Fixer(repairer).fix_json(text)
    assert diffed.count(structural_repair(text)) == 1
