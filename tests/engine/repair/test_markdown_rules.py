"""The Markdown structure rules and their deterministic fixes."""

from __future__ import annotations

from diffusion_infill.engine.repair.markdown_rules import Outline, cells, fix, outline, problems

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


def test_pipes_inside_code_spans_and_escaped_pipes_do_not_split_cells():
    assert cells("| `a|b` | c \\| d |") == [" `a|b` ", " c \\| d "]


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
    for text in ("1. Step\n\n    ```bash\n    make\n    ```\n\n2. Next\n", "- item\n\n  ```sh\n  x\n  ```\n\n- next\n",
                 "- item\n\n      ```sh\n      x\n      ```\n"):
        assert problems(text) == [] and fix(text) == text


def test_an_unclosed_fence_in_a_list_item_is_closed_at_its_indent():
    assert fix("- item\n\n  ```sh\n  x\n") == "- item\n\n  ```sh\n  x\n  ```\n"


def test_inline_code_and_emphasis_may_span_the_lines_of_a_paragraph():
    for text in ("Use ``git\ncommit`` here.\n", "``\ncode\n``\n", "**This is\nbold.**\n",
                 "*PeerJ Computer\nScience* 3\n", "see `uv\ntool` or `pipx`\n"):
        assert problems(text) == [] and fix(text) == text


def test_literal_asterisks_and_html_blocks_are_not_emphasis_or_fences():
    for text in ("Only valid with HTTP/1.*.\n", "\\* not a bullet\n", "a*b and 2 * 3\n", "[*Why *cattrs*?*](x)\n",
                 "**`--help`** and **auto**\n", "<div>\n```console\nx\n</div>\n"):
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
    for text in ("text\n\n    ```\n    code\n", "text\n\n    - a\n    * b\n",
                 "text\n\n    | a | b |\n    |---|\n    | 1 |\n", "text\n\n    some **bold\n"):
        assert problems(text) == [] and fix(text) == text


def test_pipes_make_a_table_only_where_the_delimiter_row_has_the_headers_cell_count():
    text = "a | b | c\n--- | ---\nx | y | z\n"  # GFM reads a paragraph here
    assert problems(text) == [] and fix(text) == text and outline(text).table_rows == ()


def test_literal_markers_written_by_others_are_not_unclosed():
    for text in ("- `f(payload, *, secret=None)` and f(a, *, b)\n", "- `x`: a pattern (`string`,\n  default ``)\n",
                 "escaped with the `\\` character: `\\[example\\]`.\n",
                 "*   `message` (default: `'Expected values to be deeply\n    equal'`)\n"):
        assert problems(text) == [] and fix(text) == text
