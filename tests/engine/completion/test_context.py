"""Specification of the lines from further up the file that go before the window (engine.completion.context)."""

from diffusion_infill.engine.completion.context import EARLIER_CHARS, context_ids, identifiers, related_lines

EARLIER = "import os\nparser = make_parser(prog)\ntotal = 0\nparser.add_argument(flag, default=total)\nunrelated = 1\n"


def test_identifiers_are_names_of_three_characters_or_more_without_keywords_or_common_names():
    assert identifiers("if self.value and x is None: return make_parser(ab, abc)") == {"value", "make_parser", "abc"}


def test_identifiers_are_whole_names():
    assert identifiers("0xdeadbeef parser2") == {"parser2"}


def test_lines_sharing_a_name_with_the_cursor_line_are_chosen_whole():
    assert related_lines(EARLIER, "    parser.pa", 1000) == (
        "parser = make_parser(prog)\nparser.add_argument(flag, default=total)\n"
    )


def test_nothing_is_chosen_when_no_name_is_shared():
    assert related_lines(EARLIER, "x = other_thing(", 1000) == ""


def test_nothing_is_chosen_for_a_line_of_common_names_only():
    assert related_lines("self.x = None\nreturn self\n", "return self", 1000) == ""


def test_more_shared_names_win_over_nearness():
    chosen = related_lines(EARLIER, "parser.add_argument(", len("parser.add_argument(flag, default=total)\n"))

    assert chosen == "parser.add_argument(flag, default=total)\n"


def test_ties_go_to_the_line_nearer_the_cursor():
    earlier = "first = value\nsecond = value\n"

    assert related_lines(earlier, "value", len("second = value\n")) == "second = value\n"


def test_chosen_lines_keep_their_order_and_fit_the_budget():
    earlier = "".join(f"line_{n} = shared_name\n" for n in range(10))
    budget = 3 * len("line_0 = shared_name\n")

    assert (
        related_lines(earlier, "shared_name", budget) == "line_7 = shared_name\nline_8 = shared_name\n"
        "line_9 = shared_name\n"
    )


def test_the_line_running_on_into_the_window_is_not_a_whole_line():
    assert related_lines("a = shared_name\nb = shared_name", "shared_name", 1000) == "a = shared_name\n"


def test_a_name_inside_a_longer_name_is_not_shared():
    assert related_lines("my_parser = 1\nparsers = 2\n", "parser", 1000) == ""


def test_only_the_text_nearest_the_window_is_searched():
    far = "filler\n" * 10 + "far = shared_name\n" + "filler\n" * (EARLIER_CHARS // 7)

    assert related_lines(far + "near = shared_name\n", "shared_name", 1000) == "near = shared_name\n"


def test_context_ids_spell_the_chosen_lines(tiny_tokenizer):
    ids = context_ids(tiny_tokenizer, EARLIER, "parser.pa", 100)

    assert tiny_tokenizer.decode(ids) == "parser = make_parser(prog)\nparser.add_argument(flag, default=total)\n"


def test_context_ids_drop_the_farthest_lines_to_fit_the_token_budget(tiny_tokenizer):
    last = "parser.add_argument(flag, default=total)\n"
    budget = len(tiny_tokenizer.encode(last, add_special_tokens=False))

    assert tiny_tokenizer.decode(context_ids(tiny_tokenizer, EARLIER, "parser.pa", budget)) == last


def test_context_ids_are_empty_when_nothing_relates(tiny_tokenizer):
    assert context_ids(tiny_tokenizer, EARLIER, "nothing_here", 100) == []
