"""The Markdown structure rules and their deterministic fixes."""

from __future__ import annotations

import pytest

from diffusion_infill.engine.repair.markdown_rules import Outline, cells, code_blocks, fix, outline, problems

TABLE = "| name | size |\n|------|------|\n| a |\n| b | 2 | extra |\n"


def test_a_well_formed_document_has_no_problems():
    text = "# Title\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n```py\nx = *y\n```\n\n*em* and `code`\n"
    assert problems(text) == []
    assert fix(text) == text


def test_table_rows_get_the_widest_rows_column_count_and_extra_cells_are_kept():
    fixed = fix(TABLE)
    rows = fixed.splitlines()
    assert {len(cells(row)) for row in rows} == {3}
    assert "extra" in rows[3] and rows[0].startswith("| name | size |")
    assert problems(fixed) == []


def test_table_problem_covers_the_whole_table():
    [problem] = problems("intro\n\n" + TABLE + "\noutro\n")
    assert problem.rule == "table"
    assert problem.start == len("intro\n\n") and problem.end == len("intro\n\n" + TABLE) - 1


def test_an_unclosed_fence_is_closed_with_the_same_marker():
    assert fix("text\n\n~~~~js\nlet x\n") == "text\n\n~~~~js\nlet x\n~~~~\n"


def test_cells_split_where_gfm_splits_them_at_pipes_in_code_spans_too_but_not_escaped_ones():
    assert cells("| `a|b` | c \\| d |") == [" `a", "b` ", " c \\| d "]


def test_a_row_with_a_pipe_in_a_code_span_gets_no_cell_gfm_already_has():
    text = "| a | b | c |\n|---|---|---|\n| `x|y` | z |\n"  # GFM: three cells in the last row
    assert problems(text) == [] and fix(text) == text


def test_emphasis_and_inline_code_are_closed_on_their_line():
    assert fix("some **bold\nand `code\n") == "some **bold**\nand `code`\n"
    assert fix("an *emphasis\n") == "an *emphasis*\n"


def test_arithmetic_rules_and_snake_case_are_not_emphasis():
    assert problems("2 * 3 = 6, snake_case_name\n\n* * *\n") == []


def test_list_markers_follow_the_first_item():
    assert fix("- a\n* b\n+ c\n\n1. x\n2) y\n") == "- a\n- b\n- c\n\n1. x\n2. y\n"


def test_nested_lists_keep_their_own_marker():
    text = "- a\n  * inner\n  * inner\n- b\n"
    assert problems(text) == []


def test_the_outline_counts_tables_fences_and_list_items():
    text = "| a |\n|---|\n| 1 |\n\n```\nx\n```\n\n- a\n- b\n"
    assert outline(text) == Outline(table_rows=(3,), fences=2, list_items=2)
    assert outline("| a |\n| 1 |\n") == Outline(table_rows=(), fences=0, list_items=0)  # no delimiter row


def test_a_fence_gets_the_blank_lines_markdownlint_md031_asks_for():
    assert fix("text\n```sh\nx\n```\nmore\n") == "text\n\n```sh\nx\n```\n\nmore\n"
    assert fix("```sh\na\n```\n```sh\nb\n```\n") == "```sh\na\n```\n\n```sh\nb\n```\n"  # one blank line between
    assert fix("> text\n> ```sh\n> x\n> ```\n") == "> text\n>\n> ```sh\n> x\n> ```\n"  # inside the quote


def test_a_fence_without_a_language_gets_one_from_its_content_md040():
    assert fix('```\n{"a": 1}\n```\n') == '```json\n{"a": 1}\n```\n'
    assert fix("```\n$ pip install x\n```\n") == "```sh\n$ pip install x\n```\n"
    assert fix("~~~\nhello\n~~~\n") == "~~~text\nhello\n~~~\n"
    assert [problem.rule for problem in problems("```\nx\n```\n")] == ["fence-language"]


def test_a_closed_fence_inside_a_list_item_is_left_alone():
    for text in (
        "1. Step\n\n    ```bash\n    make\n    ```\n\n2. Next\n",
        "- item\n\n  ```sh\n  x\n  ```\n\n- next\n",
        "- item\n\n      ```sh\n      x\n      ```\n",
    ):
        assert problems(text) == [] and fix(text) == text


def test_an_unclosed_fence_in_a_list_item_is_closed_at_its_indent():
    assert fix("- item\n\n  ```sh\n  x\n") == "- item\n\n  ```sh\n  x\n  ```\n"


def test_inline_code_and_emphasis_may_span_the_lines_of_a_paragraph():
    for text in (
        "Use ``git\ncommit`` here.\n",
        "``\ncode\n``\n",
        "**This is\nbold.**\n",
        "*PeerJ Computer\nScience* 3\n",
        "see `uv\ntool` or `pipx`\n",
    ):
        assert problems(text) == [] and fix(text) == text


def test_literal_asterisks_and_html_blocks_are_not_emphasis_or_fences():
    for text in (
        "Only valid with HTTP/1.*.\n",
        "\\* not a bullet\n",
        "a*b and 2 * 3\n",
        "[*Why *cattrs*?*](x)\n",
        "**`--help`** and **auto**\n",
        "<div>\n```console\nx\n</div>\n",
    ):
        assert problems(text) == [] and fix(text) == text


def test_a_padded_cell_follows_the_rows_spacing():
    assert fix("| a | b |\n| --- | --- |\n| 1 |\n") == "| a | b |\n| --- | --- |\n| 1 | |\n"
    assert fix("|a|b|\n|---|---|\n|1|\n") == "|a|b|\n|---|---|\n|1||\n"


def test_a_fence_is_closed_inside_the_block_quote_it_was_opened_in():
    assert fix("> ```sh\n> make\n\nafter\n") == "> ```sh\n> make\n> ```\n\nafter\n"
    assert fix("> ```sh\n> make\nafter\n") == "> ```sh\n> make\n> ```\n>\nafter\n"


def test_a_fence_is_closed_inside_the_list_item_it_was_opened_in():
    assert fix("- item\n\n  ```sh\n  make\n\nafter\n") == "- item\n\n  ```sh\n  make\n  ```\n\nafter\n"


def test_nothing_inside_an_indented_code_block_is_a_fence_a_list_or_a_table():
    for text in (
        "text\n\n    ```\n    code\n",
        "text\n\n    - a\n    * b\n",
        "text\n\n    | a | b |\n    |---|\n    | 1 |\n",
        "text\n\n    some **bold\n",
    ):
        assert problems(text) == [] and fix(text) == text


def test_a_delimiter_row_short_of_the_headers_cells_is_completed_in_the_tables_style():
    # GFM reads no table at all there: the delimiter row lost a cell
    assert [problem.rule for problem in problems("a | b | c\n--- | ---\nx | y | z\n")] == ["table"]
    assert fix("a | b | c\n--- | ---\nx | y | z\n") == "a | b | c\n--- | --- | ---\nx | y | z\n"
    assert fix("| a | b | c |\n|---|---|\n| 1 | 2 | 3 |\n") == "| a | b | c |\n|---|---|---|\n| 1 | 2 | 3 |\n"
    for text in ("a | b\n---\n", "a | b\n\n---\n"):  # a heading's underline, a rule: no table
        assert problems(text) == [] and fix(text) == text and outline(text).table_rows == ()


def test_padding_keeps_the_tables_pipe_style():
    assert fix("a | b | c\n--- | --- | ---\nx | y\n") == "a | b | c\n--- | --- | ---\nx | y | |\n"
    assert fix("|a|b|\n|-|\n|1|2|\n") == "|a|b|\n|-|---|\n|1|2|\n"
    # no leading pipe is added; an empty last cell needs a trailing one (GFM would not count it otherwise)
    assert fix("a | b | c\n--- | --- | ---\nx | y | z | w\n") == "a | b | c | |\n--- | --- | --- | ---\nx | y | z | w\n"


def test_literal_markers_written_by_others_are_not_unclosed():
    for text in (
        "- `f(payload, *, secret=None)` and f(a, *, b)\n",
        "- `x`: a pattern (`string`,\n  default ``)\n",
        "escaped with the `\\` character: `\\[example\\]`.\n",
        "*   `message` (default: `'Expected values to be deeply\n    equal'`)\n",
    ):
        assert problems(text) == [] and fix(text) == text


def test_an_unclosed_fence_closes_before_the_heading_after_its_code():
    text = "# Tool\n\n```sh\npip install tool\n\n## Usage\n\nRun it.\n"
    assert fix(text) == "# Tool\n\n```sh\npip install tool\n```\n\n## Usage\n\nRun it.\n"


def test_an_unclosed_fence_closes_before_plain_prose_after_a_blank_line():
    text = "```python\nx = 1\n\nprint(x)\n\nThe value is printed on the next line.\n"
    assert fix(text) == "```python\nx = 1\n\nprint(x)\n```\n\nThe value is printed on the next line.\n"


def test_comments_in_an_unclosed_fence_are_code_not_headings():
    assert fix("```sh\n# build\nmake\n\n# test\nmake test\n") == "```sh\n# build\nmake\n\n# test\nmake test\n```\n"


def test_a_closing_fence_written_left_of_its_list_item_closes_the_fence_in_the_item():
    text = "- item\n\n  ```sh\n  make\n```\n\nAfter the list.\n"
    assert fix(text) == "- item\n\n  ```sh\n  make\n  ```\n\nAfter the list.\n"


def test_a_fence_that_swallowed_the_next_ones_opening_line_is_closed_where_its_code_ends():
    text = "```sh\nmake\n\nThen build the docs:\n\n```bash\nmake docs\n```\n"  # the first closing line was lost
    assert [problem.rule for problem in problems(text)] == ["fence"]
    assert fix(text) == "```sh\nmake\n```\n\nThen build the docs:\n\n```bash\nmake docs\n```\n"


def test_a_crlf_document_keeps_crlf_in_the_lines_a_fix_adds_and_rewrites():
    assert fix("| a | b |\r\n|---|\r\n| 1 | 2 |\r\n") == "| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n"
    assert fix("text\r\n```sh\r\nx\r\n```\r\n") == "text\r\n\r\n```sh\r\nx\r\n```\r\n"


def test_a_paragraph_ends_a_list_so_the_next_list_keeps_its_own_marker():
    text = "* a\n* b\n\nA paragraph between two lists.\n\n- c\n- d\n"
    assert problems(text) == []
    assert fix(text) == text


def test_a_fence_opened_on_a_list_items_marker_line_is_the_items_fence_kept_byte_for_byte():
    text = "- first\n- ```js\n  let x = `a`;\n  ```\n- last\n"
    assert [problem.rule for problem in problems(text)] == ["fence-blank", "fence-blank"]  # MD031, as markdownlint
    fixed = fix(text)
    assert fixed == "- first\n\n- ```js\n  let x = `a`;\n  ```\n\n- last\n"  # blank lines around it, nothing else
    assert code_blocks(fixed) == code_blocks(text) == ["  let x = `a`;"]


def test_an_ordered_items_fence_left_unclosed_is_closed_inside_the_item():
    assert fix("1. ```sh\n   make\n2. next\n") == "1. ```sh\n   make\n   ```\n\n2. next\n"


def test_a_fence_is_closed_only_by_a_line_that_can_close_it():
    text = "````md\n```js\ncode\n```\n````\n"  # a longer fence shows a fenced example
    assert problems(text) == []
    example = "```text\n```js\ncode\n```\n"  # ```js cannot close it: it is the first line of its content
    assert problems(example) == [] and fix(example) == example


def test_pipes_over_a_short_delimiter_row_with_rows_as_short_are_a_paragraph_left_alone():
    for text in ("| name | size |\n| ---- |\n| disk |\n", "| name | size |\n|---|\n"):  # GFM: no table
        assert problems(text) == [] and fix(text) == text and outline(text).table_rows == ()
    lost = "| name | size |\n| ---- |\n| disk | 4 GB |\n"  # a row as wide as the header: a cell was lost
    assert fix(lost) == "| name | size |\n| ---- | --- |\n| disk | 4 GB |\n"


def _cut_fences(count: int) -> str:
    """`count` sections whose first fence lost its closing line: each swallows the opening line of the
    section's second fence, whose closing line closes it instead."""
    section = "## Part {i}\n\n```python\nprint({i})\n\n## Usage\n\n```sh\nrun {i}\n```\n\n"
    return "".join(section.format(i=i) for i in range(count))


def _calls_while_fixed(monkeypatch, name: str, modules: tuple, texts: list[str], closers: str) -> list[int]:
    """How often the markdown_rules function `name` runs (where `modules` call it) while each text is fixed
    and checked; each fixed text has no problem left, and a `closers` line for each of its two fences a part."""
    from diffusion_infill.engine.repair.markdown_rules import lines, rules

    calls = []
    real = getattr(lines, name, None) or getattr(rules, name)
    for module in modules:
        monkeypatch.setattr(module, name, lambda *args: calls.append(1) or real(*args), raising=False)
    counts = []
    for text in texts:
        calls.clear()
        fixed = fix(text)
        assert problems(fixed) == [] and fixed.count(closers) == 2 * text.count("```python")
        counts.append(len(calls))
    return counts


def test_fences_swallowing_the_next_opening_are_closed_in_one_reading_however_many(monkeypatch):
    from diffusion_infill.engine.repair.markdown_rules import fixing, rules

    # wherever the text could be read (`rules.read` reads it)
    reads = _calls_while_fixed(monkeypatch, "_lines", (fixing, rules), [_cut_fences(3), _cut_fences(12)], "```\n")
    # once a round for every fence closed: 9 more reads of the whole text; each round fixes from the reading
    # its problems were found in: the text, then after the fences are closed, then after the other fixes
    assert reads == [3, 3]


def _chained_fences(count: int) -> str:
    """`count` list items whose fence lost its closing line: each swallows the opening line of the item's
    second fence; in a list item, closing one may change how the lines after it read, so each takes a round."""
    item = "- step {i}\n\n  ```python\n  print({i})\n\n  ```sh\n  run {i}\n  ```\n\n"
    return "".join(item.format(i=i) for i in range(count))


def test_fences_closed_a_round_each_are_checked_for_the_other_rules_once_they_are_all_closed(monkeypatch):
    from diffusion_infill.engine.repair.markdown_rules import rules

    texts = [_chained_fences(3), _chained_fences(12)]
    checks = _calls_while_fixed(monkeypatch, "_unbalanced_lines", (rules,), texts, "  ```\n")
    # the text once its fences are closed (nothing else is broken) and this test's `problems`; once a round
    # before (5 and 14)
    assert checks == [2, 2]


QUOTED_FENCES = (
    "Intro\n\n> ```python\n> print(1)\n>\n> ```sh\n> run\n> ```\n\n"
    "- item\n\n  > ```js\n  > f()\n  >\n  > ```sh\n  > go\n  > ```\n\n"
    "> - step\n>\n>   ```python\n>   print(2)\n>\n>   ```sh\n>   run\n>   ```\n> - next\n>\n>   text\n"
)


@pytest.mark.parametrize("text", [_chained_fences(4), _cut_fences(4), QUOTED_FENCES])
def test_a_reading_started_again_at_the_first_fence_closed_reads_as_a_new_one(text):
    from diffusion_infill.engine.repair.markdown_rules import fixing, rules

    reading = rules.read(text)
    while reading.swallowed:
        closed, _, first = fixing._refenced(reading, 1)
        resumed, anew = rules.read(closed, reading, first), rules.read(closed)
        assert resumed.lines == anew.lines and resumed.problems == anew.problems
        assert all(old is new for old, new in zip(reading.lines[:first], resumed.lines, strict=False))
        reading = resumed
