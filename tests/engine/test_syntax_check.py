"""Specification of the syntax-closure check for inline completions."""

import subprocess
import sys
from collections.abc import Callable
from types import FrameType

import pytest

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.syntax_check import ClosureReport, Problem, check, longest_valid_prefix

CODE_LANGUAGES = ("python", "javascript", "typescript", "tsx")


def kinds(report: ClosureReport) -> set[str]:
    return {problem.kind for problem in report.problems}


@pytest.mark.parametrize("language", ["klingon", "cobol"])
def test_unsupported_language_name_is_rejected(language):
    with pytest.raises(ValueError, match=language):
        check("", "x", "", language)


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


# `bench --quick --cases 100 --case-seed 9241`: the diffusion engine's suggestions that closed the
# string the editor's quote after the cursor closes, and opened another for that quote (valid Python:
# strings side by side); pygls/__init__.py:24 and huggingface_hub's novita.py:24. Then
# `--case-seed 31337`'s filelock/_soft/_records.py:155, `re!rr}".".format(((((` in
# `lines.append(f"duration={|}")`: it closed the interpolation and the f-string and opened a string
# that holds the suffix's `}`, so no bracket is left unpaired, and prefix + suffix alone (`{}`) is
# missing the expression the cursor is asked for. The same without the hole: a closer made a
# comment's text, and (the default bench's filelock/_soft/_read_write/_sweep.py:104) an f-string's `}}`.
@pytest.mark.parametrize(
    ("prefix", "candidate", "suffix", "kept"),
    [
        ('IS_WASI = sys.platform == "', 'nt" "', '"\nIS_WASM = IS_PYODIDE or IS_WASI\n', "nt"),
        ('def f(self):\n    return "', 'r" + " "" ""', '"\n\n    def g(self):\n        pass\n', "r"),
        ('def f(self):\n    return "', 'r"', '"\n\n    def g(self):\n        pass\n', "r"),
        ('output = d.get("', 'response", None")', '")\n', "response"),
        ('    if d is not None:\n        lines.append(f"duration={', 're!r}".".format(((((', '}")\n', "re!r"),
        ('x = f"a={', 'b}" + "', '}"\n', "b"),
        ("print(", "x) # (", ")\n", "x"),
        ('    watched.update(f"{k', "}}", '}" for name in names)\n', ""),
    ],
)
def test_closing_the_string_or_bracket_the_suffix_closes_is_a_duplicate_closer(prefix, candidate, suffix, kept):
    report = check(prefix, candidate, suffix, "python")

    assert not report.valid
    assert (len(kept), "duplicate-closer") in [(p.start, p.kind) for p in report.problems]
    assert longest_valid_prefix(prefix, candidate, suffix, "python") == kept
    assert check(prefix, kept, suffix, "python").valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_closing_the_call_the_suffix_closes_and_opening_another_is_a_duplicate_closer(language):
    report = check("x = f(", "a) + (b", ")\n", language)

    assert [(p.start, p.kind) for p in report.problems] == [(1, "duplicate-closer")]


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_closing_the_bracket_the_suffix_closes_around_an_empty_hole_is_a_duplicate_closer(language):
    # prefix + suffix alone (`d[]`) holds the parser's missing expression at the cursor: the hole.
    assert [(p.start, p.kind) for p in check("x = d[", "a] + d[b", "]\n", language).problems] == [
        (1, "duplicate-closer")
    ]
    assert check("x = d[", "a", "]\n", language).valid


@pytest.mark.parametrize("language", CODE_LANGUAGES)
def test_a_call_inside_the_call_the_suffix_closes_is_valid(language):
    assert check("x = f(", "g(a), b", ")\n", language).valid


def test_closing_a_string_the_suffix_s_quote_did_not_close_is_valid():
    assert check('print("a', '", ', '"b")\n', "python").valid


def test_a_closer_the_suffix_has_after_blank_lines_stays_the_suffix_s():
    assert not check("x = [\n    ", "1], [2", "\n]\n", "python").valid
    assert check("x = [\n    ", "1, 2", "\n]\n", "python").valid


def test_where_a_candidate_retypes_a_closer_of_the_file_as_written():
    prefix, suffix = 'IS_WASI = sys.platform == "', '"\n'

    assert syntax_check.retyped_closer(prefix, 'nt" "', suffix, "python", original="wasi") == 2
    assert syntax_check.retyped_closer(prefix, "nt", suffix, "python", original="wasi") is None


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


# Languages from tree-sitter-language-pack: an auto-paired closer typed again is cut

# language: (prefix, the completion, suffix whose first closer the completion types again)
AUTO_PAIRED = {
    "go": ('package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(', '"hi")', ")\n}\n"),
    "rust": ("fn main() {\n    let v = vec![", "1, 2]", "];\n}\n"),
    "c": ("#include <stdio.h>\n\nint main(void) {\n    printf(", '"%d\\n", 1)', ");\n}\n"),
    "java": ("class A {\n    void f() {\n        System.out.println(", '"hi")', ");\n    }\n}\n"),
    "ruby": ("config = { name: 'x', ", "size: 2 }", "}\n"),
    "bash": ("files=$(ls ", "-la)", ')\necho "$files"\n'),
    "yaml": ("name: demo\ntags: [a, ", "b]", "]\n"),
}


@pytest.mark.parametrize("language", sorted(AUTO_PAIRED))
def test_a_pack_language_cuts_a_retyped_auto_paired_closer(language):
    prefix, candidate, suffix = AUTO_PAIRED[language]
    report = check(prefix, candidate, suffix, language)

    assert [problem.kind for problem in report.problems] == ["duplicate-closer"]
    assert report.first_bad_offset() == len(candidate) - 1
    assert longest_valid_prefix(prefix, candidate, suffix, language) == candidate[:-1]


@pytest.mark.parametrize("language", sorted(AUTO_PAIRED))
def test_a_pack_language_accepts_leaving_the_closer_to_the_suffix(language):
    prefix, candidate, suffix = AUTO_PAIRED[language]
    assert check(prefix, candidate[:-1], suffix, language).valid


@pytest.mark.parametrize(
    ("prefix", "candidate", "suffix"),
    [
        ('echo "${name', "}", '}"\n'),  # the second "}" would be a character of the string
        ('dir="$(pwd', ")", ')/bin"\n'),
        ("if [ -n x ", "]", "]; then :; fi\n"),  # "]" is a word to the "[" command
        ("if [[ -n x ", "]]", "]]; then :; fi\n"),
    ],
)
def test_shell_cuts_a_retyped_closer_that_would_become_text(prefix, candidate, suffix):
    report = check(prefix, candidate, suffix, "bash")

    assert not report.valid
    assert longest_valid_prefix(prefix, candidate, suffix, "bash") == ""


def test_shell_case_patterns_end_in_a_lone_parenthesis_that_pairs_with_nothing():
    prefix = 'case "$(u'
    assert check(prefix, 'name)" in', "\n*MINGW*) echo win ;;\nesac\n", "bash").valid


def test_every_language_checks_without_hanging():
    """A parse cannot be interrupted, so a grammar that never returns would stop the engine for good."""
    code = (
        "from diffusion_infill.engine.languages import LANGUAGES\n"
        "from diffusion_infill.engine.syntax_check import check\n"
        "for language in LANGUAGES:\n"
        "    check('f(x', '))\\n\"a', ')\\n', language)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _steps(work: Callable[[], object]) -> int:
    """Lines of this module's Python that `work` runs (its parses run in C, in linear time): a count of the
    work done, the same on a loaded machine as on a quiet one."""
    steps = 0

    def count(frame: FrameType, event: str, arg: object) -> Callable | None:
        nonlocal steps
        steps += event == "line"
        return count

    def enter(frame: FrameType, event: str, arg: object) -> Callable | None:
        return count if frame.f_code.co_filename == syntax_check.__file__ else None

    previous = sys.gettrace()  # a coverage tool's, if one runs
    sys.settrace(enter)
    try:
        work()
    finally:
        sys.settrace(previous)
    return steps


def test_a_window_cut_inside_a_long_json_line_is_checked_in_linear_time():
    """Every top-level comma of a window that starts inside an array is an error of its own: hundreds
    of flaws before and after the candidate, each looked up among the baseline's, never compared with
    all of them (then 16 times the window ran 88 times the steps)."""

    def steps(records: int) -> int:
        window = ", ".join(f'{{"id": {i}, "tags": ["a", "b"]}}' for i in range(records))[9:]
        syntax_check._analyze.cache_clear()  # each window parsed and analysed anew
        return _steps(lambda: check(window, "1", "]", "json"))

    check("[1", "]", "", "json")  # the grammar loaded before the steps are counted
    assert steps(16 * 100) < 32 * steps(100)  # linear: 16 times; a sort or bisection in Python would be 25
