"""Issue 51's shapes of damage, each from an example of our own: what Fix JSON writes must load with a
strict JSON parser (no NaN, no Infinity: RFC 8259 section 6 has no such numbers) and keep what the user
wrote (its words, its values' types and signs)."""

from __future__ import annotations

import json

import pytest

from diffusion_infill.engine.repair import jsonfix
from diffusion_infill.engine.repair.fixes import Fixer, json_broken


def _strict(text: str):
    def constant(name: str):
        raise ValueError(name)

    return json.loads(text, parse_constant=constant)


def fixed(text: str):
    result = Fixer(None).fix_json(text)
    assert result.fixed, result.reason
    return _strict(result.text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{site: https://docs.example.net/a/b?x=1, "n": 2}', {"site": "https://docs.example.net/a/b?x=1", "n": 2}),
        ("[ftp://files.example.com/pub/, 3]", ["ftp://files.example.com/pub/", 3]),
        ('{"src": file:///home/ada/notes.txt}', {"src": "file:///home/ada/notes.txt"}),
    ],
)
def test_a_url_written_without_quotes_is_one_value_not_a_comment(text, value):
    assert fixed(text) == value
    assert jsonfix.dropped_comments(text, Fixer(None).fix_json(text).text) == 0


def test_a_comment_still_starts_where_a_comment_can_stand():
    text = '{"a": 1, // the first\n "b": 2 /* the second */}'
    assert fixed(text) == {"a": 1, "b": 2}
    assert jsonfix.dropped_comments(text, Fixer(None).fix_json(text).text) == 2


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"low": -Infinity, "k": 1,}', {"low": "-Infinity", "k": 1}),
        ("[+Infinity, -NaN, 2,]", ["+Infinity", "-NaN", 2]),
    ],
)
def test_a_sign_before_infinity_or_nan_is_kept_in_the_string_it_becomes(text, value):
    assert fixed(text) == value


def test_nan_is_broken_json_as_strict_parsers_judge_it():
    text = '{"ratio": NaN, "count": 3}'
    assert json_broken(text)
    assert fixed(text) == {"ratio": "NaN", "count": 3}


def test_javascripts_undefined_is_null():
    assert fixed("{total: undefined, rows: [undefined, 1]}") == {"total": None, "rows": [None, 1]}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"title', {"title": None}),  # cut inside the only key: kept, with null
        ('{"title"', {"title": None}),  # a complete key and no value
        ('{"n": 1, "tit', {"n": 1}),  # cut inside a later key: dropped
        ('{"name": "Z\\u00', {"name": "Z"}),  # a cut \u escape dropped
        ('["caf\\', ["caf"]),  # a lone backslash at the end
        ('"\\u2', ""),
    ],
)
def test_cut_off_input_always_gets_its_best_reading(text, value):
    assert fixed(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"id", null, 7}', ["id", None, 7]),
        ("{'on', False, 1.5,", ["on", False, 1.5]),
    ],
)
def test_bare_items_in_braces_keep_their_types(text, value):
    assert fixed(text) == value


def test_an_object_that_lost_its_closer_before_the_next_item_keeps_no_trailing_comma():
    assert fixed('[{"k":"a",{"k":"b"}]') == [{"k": "a"}, {"k": "b"}]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"big": NumberLong("9007199254740993"), "i": NumberInt("7"),}', {"big": 9007199254740993, "i": 7}),
        ('[NumberDecimal("2.50"), ObjectId("64b1")]', [2.5, "64b1"]),
    ],
)
def test_a_number_wrapper_keeps_the_numbers_type(text, value):
    assert fixed(text) == value


def test_a_block_comment_written_against_a_value_is_not_part_of_it():
    assert fixed('{"w": 640/*px*/, "h": 480/*px*/,}') == {"w": 640, "h": 480}


def test_a_number_with_leading_zeros_is_kept_as_written_in_a_string():
    assert fixed('{zip: 02134, "n": [007, -05]}') == {"zip": "02134", "n": ["007", "-05"]}


def test_json_lines_are_fixed_line_by_line_and_stay_json_lines():
    text = '{"event": "start"}\n{"event": "stop",}\r\n\n{\'n\': 1}\n'
    result = Fixer(None).fix_json_lines(text)
    assert result.fixed and result.text == '{"event": "start"}\n{"event": "stop"}\r\n\n{"n": 1}\n'
    assert Fixer(None).fix_json_lines('{"a": 1}\n{"b": 2}\n').already_valid
