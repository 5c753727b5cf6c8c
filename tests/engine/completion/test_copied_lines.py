"""Specification of the whole-line candidates copied from the code (diffusion_infill.engine.completion.copied_lines)."""

from diffusion_infill.engine.completion.copied_lines import MAX_CHARS, candidates
from diffusion_infill.engine.requests import InfillRequest


def texts(prefix, suffix="", others=()):
    return [c.text for c in candidates(InfillRequest(prefix, suffix, "python"), others)]


def test_an_earlier_line_that_starts_like_the_cursors_gives_its_whole_rest():
    prefix = "total = compute(width, height, depth)\nprint(total)\ntotal = comp"

    assert "ute(width, height, depth)" in texts(prefix)


def test_the_last_tokens_before_the_cursor_found_inside_an_earlier_line_give_what_follows_them():
    prefix = "    self.assertEqual(result.status_code, 200)\n\nother = response.stat"

    assert "us_code, 200)" in texts(prefix)


def test_the_line_after_an_analogous_line_comes_with_its_names_swapped():
    prefix = (
        "    def count_lines(self):\n        return len(self.lines)\n\n    def count_words(self):\n        return len("
    )

    found = candidates(InfillRequest(prefix, "", "python"))

    assert any(c.text == "self.words)" and c.rule == "analogous" for c in found)


def test_candidates_that_several_lines_give_count_every_line():
    prefix = "x = load(path)\ny = 1\nx = load(path)\nx = lo"

    best = candidates(InfillRequest(prefix, "", "python"))[0]

    assert best.text == "ad(path)" and best.agree >= 2


def test_the_nearest_line_wins_among_equal_matches():
    prefix = "value = first(a)\nvalue = second(b)\nvalue = "

    assert texts(prefix)[0] == "second(b)"


def test_nothing_where_the_cursor_does_not_end_its_line():
    assert texts("total = compute(width)\ntotal = comp", " + 1\n") == []


def test_before_closers_the_editor_typed_a_candidate_ends_with_them_and_drops_them():
    prefix = "print(len(items))\nprint(len(it"

    assert texts(prefix, "))\n")[0] == "ems"


def test_nothing_on_a_line_of_only_indentation():
    assert texts("def f():\n    return 1\n    ") == []


def test_other_open_documents_give_candidates_too():
    assert "ute_area(shape)" in texts("result = comp", others=["result = compute_area(shape)\n"])


def test_the_rest_of_a_line_longer_than_a_suggestion_is_not_offered():
    prefix = f"call({', '.join(['argument'] * 40)})\ncall(argu"

    assert all(len(text) <= MAX_CHARS for text in texts(prefix))
