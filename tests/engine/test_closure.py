"""Specification of the syntax-closure check for inline completions."""

import time

import pytest

from diffusion_infill.engine.closure import (
    LANGUAGES,
    ClosureReport,
    Problem,
    check,
    language_for_id,
    language_for_path,
    longest_valid_prefix,
)

CODE_LANGUAGES = ("python", "javascript", "typescript", "tsx")


def kinds(report: ClosureReport) -> set[str]:
    return {problem.kind for problem in report.problems}


# Languages


def test_every_required_language_is_supported():
    assert set(LANGUAGES) >= {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "json",
        "markdown",
    }


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app.py", "python"),
        ("stubs/app.pyi", "python"),
        ("web/app.js", "javascript"),
        ("web/app.mjs", "javascript"),
        ("web/app.cjs", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/app.ts", "typescript"),
        ("web/app.mts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("package.json", "json"),
        ("tsconfig.jsonc", "json"),
        ("README.md", "markdown"),
        ("notes.markdown", "markdown"),
        ("SHOUTING.PY", "python"),
    ],
)
def test_language_for_path_goes_by_extension(path, language):
    assert language_for_path(path) == language


@pytest.mark.parametrize("path", ["Makefile", "main.rs", "archive.tar.gz", ".py"])
def test_language_for_path_is_none_for_unknown_files(path):
    assert language_for_path(path) is None


@pytest.mark.parametrize(
    ("language_id", "language"),
    [
        ("python", "python"),
        ("javascript", "javascript"),
        ("javascriptreact", "javascript"),
        ("typescript", "typescript"),
        ("typescriptreact", "tsx"),
        ("json", "json"),
        ("jsonc", "json"),
        ("markdown", "markdown"),
    ],
)
def test_language_for_id_maps_lsp_language_ids(language_id, language):
    assert language_for_id(language_id) == language


def test_language_for_id_is_none_for_unknown_ids():
    assert language_for_id("rust") is None


def test_unsupported_language_name_is_rejected():
    with pytest.raises(ValueError, match="cobol"):
        check("", "x", "", "cobol")


# Report


def test_first_bad_offset_is_none_for_a_valid_report():
    assert ClosureReport(valid=True, problems=()).first_bad_offset() is None


def test_first_bad_offset_is_the_smallest_problem_start():
    problems = (Problem(4, 5, "bracket", "b"), Problem(2, 3, "error", "e"))
    assert ClosureReport(valid=False, problems=problems).first_bad_offset() == 2


# Code languages


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_empty_candidate_is_always_valid(language):
    assert check("print(x", "", "\n", language).valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_closing_an_unclosed_call_is_valid(language):
    assert check("print(x", ")", "\n", language).valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_closing_an_unclosed_call_twice_is_invalid_at_the_extra_closer(language):
    report = check("print(x", "))", "\n", language)

    assert not report.valid
    assert "bracket" in kinds(report)
    assert report.first_bad_offset() == 1


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_retyping_an_auto_paired_closer_is_a_duplicate_closer(language):
    report = check("foo(", "a, b)", ")\n", language)

    assert not report.valid
    assert report.problems == (Problem(4, 5, "duplicate-closer", report.problems[0].message),)


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_leaving_the_auto_paired_closer_to_the_suffix_is_valid(language):
    assert check("foo(", "a, b", ")\n", language).valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_stealing_the_auto_paired_closer_is_blamed_on_the_candidate_closer(language):
    report = check("foo(", "a, b);", ")\n", language)

    assert not report.valid
    assert any(p.kind == "bracket" and p.start == 4 for p in report.problems)


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_longest_valid_prefix_drops_a_stolen_closer_and_what_follows(language):
    assert longest_valid_prefix("foo(", "a, b);", ")\n", language) == "a, b"


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_unclosed_string_is_invalid_where_it_opens(language):
    report = check("print(", '"hello', ")\n", language)

    assert not report.valid
    assert report.first_bad_offset() == 0


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_closed_string_is_valid(language):
    assert check("print(", '"hello"', ")\n", language).valid


def test_python_unclosed_string_is_invalid_even_mid_statement():
    assert not check("x = ", '"hello', "\n", "python").valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_brackets_inside_strings_do_not_count(language):
    assert check("print(", '"(["', ")\n", language).valid


@pytest.mark.parametrize("language", ["javascript", "typescript", "tsx"])
def test_template_substitution_is_closed_by_a_brace(language):
    assert check("const s = `a ${", "b}`;", "\n", language).valid


@pytest.mark.parametrize(
    ("language", "prefix"),
    [
        ("python", 'd = {"a": 1, '),
        ("javascript", "const d = {a: 1, "),
        ("typescript", "const d: Record<string, number> = {a: 1, "),
        ("tsx", "const d = {a: 1, "),
    ],
)
def test_completing_a_dict_literal_is_valid(language, prefix):
    closer = "}" if language == "python" else "};"
    assert check(prefix, '"b": 2' + closer, "\n", language).valid


@pytest.mark.parametrize(
    ("language", "prefix"),
    [
        ("python", 'd = {"a": 1, '),
        ("javascript", "const d = {a: 1, "),
        ("typescript", "const d: Record<string, number> = {a: 1, "),
        ("tsx", "const d = {a: 1, "),
    ],
)
def test_closing_a_dict_literal_with_the_wrong_bracket_is_invalid(language, prefix):
    candidate = '"b": 2]'
    report = check(prefix, candidate, "\n", language)

    assert not report.valid
    assert report.first_bad_offset() == candidate.index("]")


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_candidate_that_fixes_errors_is_valid(language):
    assert check("f(x", ")", "\nf(y)\n", language).valid


def test_closing_a_call_may_reveal_errors_the_baseline_already_had_in_its_window():
    # The window starts inside an expression and its suffix is indented oddly: once the
    # call is closed, the parser reports that damage as two errors instead of one.
    prefix = "        [f(i) for i in xs])\n    pattern = join(base, "
    suffix = "\n        depth = 0\n        while results:\n            path = join(*(['dir'] + ['file']))"
    assert check(prefix, "'d')", suffix, "python").valid
    assert not check(prefix, "'d'))", suffix, "python").valid


def test_python_candidate_that_finishes_a_def_is_valid():
    assert check("def f(x", "):", "\n    return x\n", "python").valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_opening_a_bracket_that_never_closes_is_invalid(language):
    report = check("x = ", "[1, 2", "\n", language)

    assert not report.valid
    assert report.first_bad_offset() == 0


def test_problems_stay_within_the_candidate():
    candidate = "a, b);"
    report = check("foo(", candidate, ")\n", "javascript")

    assert report.problems
    for problem in report.problems:
        assert 0 <= problem.start <= problem.end <= len(candidate)


# JSON


def test_json_completing_an_object_is_valid():
    assert check('{"a": 1, ', '"b": 2}', "", "json").valid


def test_json_closing_an_object_twice_is_invalid():
    candidate = '"b": 2}}'
    report = check('{"a": 1, ', candidate, "", "json")

    assert not report.valid
    assert report.first_bad_offset() == candidate.rindex("}")


# Markdown


def test_markdown_fence_that_never_closes_is_invalid():
    report = check("# Title\n\n", "```python\nprint(1)\n", "\nMore text.\n", "markdown")

    assert not report.valid
    assert kinds(report) == {"fence"}
    assert report.first_bad_offset() == 0


def test_markdown_fence_that_closes_is_valid():
    candidate = "```python\nprint(1)\n```\n"
    assert check("# Title\n\n", candidate, "\nMore text.\n", "markdown").valid


def test_markdown_closing_a_fence_opened_before_the_cursor_is_valid():
    assert check("```\ncode\n", "```\n", "\nText.\n", "markdown").valid


def test_markdown_prose_brackets_do_not_count():
    assert check("Steps:\n\n", "1) mix :)", "\n", "markdown").valid


# Offsets are characters, not bytes


def test_offsets_count_emoji_and_cjk_as_single_characters():
    candidate = '"😀漢" ]'
    report = check('s = "😀漢字" + foo(', candidate, ")\n", "python")

    assert report.first_bad_offset() == candidate.index("]")


def test_duplicate_closer_offset_counts_characters_after_emoji():
    candidate = '"字😀", 1)'
    report = check('s = "😀漢字" + foo(', candidate, ")\n", "python")

    assert report.problems[0].kind == "duplicate-closer"
    assert report.problems[0].start == len(candidate) - 1


def test_longest_valid_prefix_cuts_at_a_character_after_emoji():
    candidate = '"😀", b)'
    assert longest_valid_prefix("foo(", candidate, ")\n", "python") == '"😀", b'


# Unknown language: brackets on the raw text


def test_unknown_language_accepts_balanced_closer():
    assert check("print(x", ")", "\n", None).valid


def test_unknown_language_rejects_extra_closer():
    report = check("print(x", "))", "\n", None)

    assert not report.valid
    assert report.first_bad_offset() == 1


def test_unknown_language_reports_duplicate_closer():
    report = check("foo(", "a, b)", ")\n", None)

    assert [problem.kind for problem in report.problems] == ["duplicate-closer"]
    assert report.first_bad_offset() == 4


def test_unknown_language_counts_brackets_inside_strings():
    assert not check("x = ", '"("', "\n", None).valid


# Truncation


def test_longest_valid_prefix_drops_a_duplicated_auto_paired_closer():
    assert longest_valid_prefix("foo(", "a, b)", ")\n", "python") == "a, b"


def test_longest_valid_prefix_keeps_a_valid_candidate_whole():
    assert longest_valid_prefix("print(x", ")\nprint(y)", "\n", "python") == ")\nprint(y)"


def test_longest_valid_prefix_cuts_before_a_bracket_that_never_closes():
    assert longest_valid_prefix("print(x", ")\nfoo(", "", "python") == ")\nfoo"


def test_longest_valid_prefix_cuts_before_the_line_that_breaks():
    candidate = "x = 1\ny = )"
    assert longest_valid_prefix("", candidate, "\n", "python") == "x = 1\n"


def test_longest_valid_prefix_is_empty_when_nothing_is_valid():
    assert longest_valid_prefix("x = 1\n", ")", "", "python") == ""


def test_longest_valid_prefix_truncates_with_the_bracket_fallback():
    assert longest_valid_prefix("foo(", "a, b)", ")\n", None) == "a, b"


def test_a_window_cut_inside_a_long_json_line_is_checked_in_linear_time():
    """Every top-level comma of a window that starts inside an array is an error of its own: hundreds
    of flaws before and after the candidate, each looked up among the baseline's, never compared with
    all of them (16 times the window took over 100 times as long when they were)."""

    def seconds(records: int) -> float:
        window = ", ".join(f'{{"id": {i}, "tags": ["a", "b"]}}' for i in range(records))[9:]
        best = float("inf")
        for candidate in ("1", "2", "3"):  # a new candidate is a new parse
            started = time.perf_counter()
            check(window, candidate, "]", "json")
            best = min(best, time.perf_counter() - started)
        return best

    assert seconds(16 * 400) < 40 * seconds(400)
