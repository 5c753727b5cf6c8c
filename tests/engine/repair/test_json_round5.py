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
