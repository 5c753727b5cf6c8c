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


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"answer": "```sh\nls -la\n```", "ok": true', {"answer": "```sh\nls -la\n```", "ok": True}),
        ('{"answer": "~~~\nx = 1\n~~~"}', {"answer": "~~~\nx = 1\n~~~"}),
    ],
)
def test_a_string_that_opens_with_a_fenced_block_holds_all_of_it(text, value):
    assert fixed(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        # jsonrepair's rule (src/regular/jsonrepair.ts:519-525, isInsideUnclosedBracket in
        # src/utils/stringUtils.ts:219-230): a quote before a closer the string itself opened is its text
        ('{"note": "see [a, b"] later", "k": 1}', {"note": 'see [a, b"] later', "k": 1}),
        ('{"note": "see [a, b"], later", "k": 1}', {"note": 'see [a, b"], later', "k": 1}),  # a comma after it
        ('["map {x: 1"} done", 2]', ['map {x: 1"} done', 2]),
        # and one before a closer with words after it (JSON has none there): no key `here` made up
        ('{"title": "see "] here", "id": 2}', {"title": 'see "] here', "id": 2}),
    ],
)
def test_a_quote_before_a_closer_the_json_cannot_hold_there_does_not_end_the_string(text, value):
    assert fixed(text) == value


def test_an_invalid_escape_is_kept_as_written_and_a_valid_one_stays_an_escape():
    # `\T` and `\U` start no JSON escape: the backslash is text; `\b` and `\n` are JSON's escapes as written
    assert fixed('{"dir": "D:\\Temp\\Users\\bin\\new"}') == {"dir": "D:\\Temp\\Users\x08in\new"}


@pytest.mark.parametrize(
    ("text", "written"),
    [
        # jsonrepair writes them (src/regular/jsonrepair.ts:683-715; src/index.test.ts:603 and :626)
        ("-", "-0"),
        (".", "0.0"),
        ("[4, -, 6]", "[4, -0, 6]"),
        ('{"t": .}', '{"t": 0.0}'),
        ('{"low": -', '{"low": -0}'),
    ],
)
def test_a_number_cut_to_its_sign_or_point_is_zero_as_jsonrepair_writes_it(text, written):
    assert Fixer(None).fix_json(text).text == written


def test_a_dash_before_words_is_no_number():
    assert fixed("- buy milk") == "buy milk"  # a list item's marker, not `-0`


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"s": first/*x*/ + "second"}', {"s": "firstsecond"}),
        ('[left+"right"]', ["leftright"]),
    ],
)
def test_a_bare_word_joined_to_a_string_by_plus_is_one_string(text, value):
    assert fixed(text) == value


def test_a_leading_zero_number_run_into_letters_is_one_string():
    assert fixed('{"code": 007x, "n": [09b]}') == {"code": "007x", "n": ["09b"]}


def test_digit_separators_are_dropped_from_a_number():
    # Python's and JavaScript's `1_000`, as json_repair reads them (tests/test_parse_number.py:7-8)
    assert fixed("[1_000, 2_500.2_5, -3_0]") == [1000, 2500.25, -30]


def test_an_empty_key_cut_off_is_no_member():
    assert fixed('[{"a": 1}, {"') == [{"a": 1}, {}]  # as json_repair reads `{"` (tests/test_parse_object.py:20)


def test_bare_words_on_lines_of_their_own_are_a_list():
    assert fixed("red\ngreen\nblue") == ["red", "green", "blue"]


def test_a_string_that_lost_its_quote_before_a_plus_joins_the_next_string():
    assert fixed('{"greeting": "hello /* sic */ + "world"}') == {"greeting": "helloworld"}


def test_a_regular_expression_as_a_value_is_its_text():
    assert fixed('{"digits": /^[0-9]+$/, "n": 1,}') == {"digits": "/^[0-9]+$/", "n": 1}


def test_a_bare_word_before_a_quoted_key_is_a_note_not_a_key():
    # no key made of the word: it would take "b" for its value and leave 2 a key with an invented null
    assert fixed('{"a": 1, NOTE "b": 2}') == {"a": 1, "b": 2}


def test_an_object_closed_too_early_takes_back_a_member_that_lost_its_colon():
    assert fixed('{"id": 7}, "name" "Ada"}') == {"id": 7, "name": "Ada"}  # "Ada" was dropped


def test_an_array_where_a_key_belongs_after_an_array_value_goes_on_that_array():
    # json_repair's reading (src/json_repair/parse_object.py:132-172); the object kept "n": 3 no longer lost
    assert fixed('{"tags": ["red"], ["green", "blue"], [], "n": 3}') == {"tags": ["red", "green", "blue"], "n": 3}
