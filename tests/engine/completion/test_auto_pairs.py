"""engine.completion.auto_pairs: the rest of a line that only closers the editor typed by itself make up."""

from __future__ import annotations

from diffusion_infill.engine.completion.auto_pairs import auto_paired_closers


def test_the_rest_of_a_line_of_closers_only_is_auto_paired():
    assert auto_paired_closers('print(f"{x")\nnext', 10) == '")'
    assert auto_paired_closers("f(x)\r\n", 3) == ")"  # the line break is not part of it


def test_closers_followed_by_code_or_nothing_are_not_an_auto_pair():
    assert auto_paired_closers("f(x) + g(y)", 3) == ""
    assert auto_paired_closers("f(x", 3) == ""
    assert auto_paired_closers("f(x)\n", 4) == ""
