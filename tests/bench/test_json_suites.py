"""bench.json_suites reads the peers' tests from a checkout and scores answers as a strict parser would."""

from __future__ import annotations

from pathlib import Path

from diffusion_infill.bench.json_suites import Case, _drops_or_invents, fix_as_file, json_repair_cases

JSON_REPAIR_TESTS = """
from src.json_repair.json_repair import repair_json

def test_shapes():
    assert repair_json("{'a': 1,") == '{"a": 1}'
    assert repair_json("[1, 2", return_objects=True) == [1, 2]
    assert repair_json("}") == ""
    assert repair_json("x", stream_stable=True) == '"x"'
"""


def test_json_repairs_tests_are_read_as_text_and_expected_value(tmp_path: Path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_parse_object.py").write_text(JSON_REPAIR_TESTS)
    (tmp_path / "tests" / "test_json_repair.py").write_text("")
    # `""` does not load (not a repair's test), and an option other than return_objects is left out
    assert json_repair_cases(tmp_path) == [Case("{'a': 1,", {"a": 1}), Case("[1, 2", [1, 2])]


def test_an_answer_that_drops_a_word_or_invents_one_is_counted():
    case = Case('{"a": 1, b}', {"a": 1, "b": None})
    assert not _drops_or_invents(case, '{"a": 1, "b": null}')  # null is the expected value's
    assert _drops_or_invents(Case('{"a": 1, "b"', {"a": 1, "b": "x"}), '{"a": 1}')  # "b" dropped
    assert _drops_or_invents(Case('{"a": 1,', {"a": 1, "c": 2}), '{"a": 1, "z": null}')  # z, null invented


def test_each_case_is_fixed_as_a_json_file_by_the_command_line(tmp_path: Path):
    answer = fix_as_file('{"a": 1 // one\n}', tmp_path)
    assert answer["text"] == '{"a": 1\n}' and answer["dropped_comments"] == 1
