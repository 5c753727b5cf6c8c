"""Benchmark cases (diffusion_infill.bench.cases) come from code no model here was trained on, and each
kind puts the cursor where it says."""

from __future__ import annotations

import pytest

from diffusion_infill.bench.cases import CLOSERS, KINDS, build_cases, third_party_files
from diffusion_infill.engine.training.corpus import is_held_out, stdlib_files


@pytest.fixture(scope="module")
def cases():
    return build_cases(30, seed=7)


@pytest.fixture(scope="module")
def originals() -> dict[str, str]:
    documents = [*stdlib_files(held_out=True), *third_party_files()]
    return {doc.name: doc.text for doc in documents}


def test_kinds_come_in_turn_and_both_sources_are_used(cases):
    assert [c.kind for c in cases[: len(KINDS)]] == list(KINDS)
    sources = {c.source for c in cases}
    assert "stdlib" in sources and len(sources) > 1


def test_stdlib_cases_come_from_the_held_out_split_only(cases):
    stdlib = [c for c in cases if c.source == "stdlib"]
    assert stdlib and all(is_held_out(c.name.split(":")[0]) for c in stdlib)


def test_prefix_expected_and_suffix_are_the_original_text(cases, originals):
    for case in cases:
        assert case.prefix + case.expected + case.suffix in originals[case.name.split(":")[0]], case.name


def test_each_kind_places_the_cursor_as_named(cases):
    for case in cases:
        line_before = case.prefix.rsplit("\n", 1)[-1]
        if case.kind == "mid-word":
            assert line_before[-1].isalnum() or line_before[-1] == "_"
            assert case.expected[0].isalnum() or case.expected[0] == "_"
        elif case.kind == "closers":
            assert case.suffix[0] in CLOSERS and case.expected[-1] not in CLOSERS
        elif case.kind == "multi-line":
            assert not line_before.strip() and "\n" in case.expected
        elif case.kind == "line":
            assert case.suffix.startswith("\n")


def test_the_same_seed_gives_the_same_cases():
    assert build_cases(5, seed=3) == build_cases(5, seed=3)
