"""Where a repair changed a text: exact for small changes, and the work difflib is given bounded at any size."""

from __future__ import annotations

from diffusion_infill.engine.repair.diff import BUDGET, Change, diff
from diffusion_infill.engine.repair.spans import Span


def test_a_small_change_is_found_character_by_character():
    assert diff('{"a": 1,}', '{"a": 1}').changes == (Change(7, 8, 7, 7),)
    assert diff("abc", "abXc").spans == [Span(2, 2)]
    assert diff("same", "same").changes == ()


def test_the_common_start_and_end_are_skipped_without_matching_them():
    line = '{"id": 1, "name": "x"},' * 50_000  # one line of 1.15 MB
    found = diff(line + "]", line[:-1] + "]")  # the trailing comma dropped
    assert found.spans == [Span(len(line) - 1, len(line))] and found.size == 1
    assert found.compared == 0  # nothing was left between the common start and end to match


def test_changes_at_both_ends_are_found_in_bounded_work_at_any_size():
    for records in (5_000, 20_000):  # 0.1 MB and 0.4 MB lines
        body = '{"id": 1, "name": "x"}, ' * records
        before, after = "[" + body + "1,]", "[" + body + "1]"
        before, after = "{'a': " + before, '{"a": ' + after
        found = diff(before, after)
        assert found.compared <= 2 * BUDGET  # matched token by token, or one replacement past the budget
        assert found.spans[0].start == 1 and found.spans[-1].end == len(before) - 1  # "{" and "]" kept


def test_past_the_budget_tokens_are_matched_then_one_replacement_is_counted():
    words = "alpha " * 100  # 600 characters (360,000 pairs, past the budget), 200 tokens
    found = diff("x " + words + "y", "z " + words + "w")
    assert found.spans == [Span(0, 1), Span(602, 603)] and 0 < found.compared <= BUDGET
    many = "alpha " * 1_000  # 2,000 tokens each: 4 million pairs, past the budget
    found = diff("x " + many + "y", "z " + many + "w")
    assert found.changes == (Change(0, 6003, 0, 6003),) and found.compared == 0
