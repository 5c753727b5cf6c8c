"""The broken-JSON corpora and the comparison's scoring: every case is broken, its intended value is
JSON, and both peers (json_repair in-process, jsonrepair in a real Node process) answer per case."""

from __future__ import annotations

import json

import pytest

from diffusion_infill.bench.json_corpora import CORPORA, README, corpus
from diffusion_infill.bench.json_repair_compare import (
    JSONREPAIR,
    REPORTED_SEED,
    TUNING_SEED,
    canonical,
    json_repair_outputs,
    jsonrepair_outputs,
    score,
)
from diffusion_infill.bench.npm_peers import node_for


@pytest.mark.parametrize("name", list(CORPORA))
def test_every_case_is_broken_and_its_intended_value_is_json(name):
    cases = corpus(CORPORA[name], 5, TUNING_SEED)
    assert len(cases) == 5
    for broken, intended in cases:
        with pytest.raises(json.JSONDecodeError):
            json.loads(broken)
        json.dumps(intended)


def test_the_same_seed_gives_the_same_corpus_and_the_reported_seed_another():
    damage = README["unquoted values"]
    assert corpus(damage, 3, TUNING_SEED) == corpus(damage, 3, TUNING_SEED) != corpus(damage, 3, REPORTED_SEED)


def test_numbers_compare_by_value_and_booleans_are_not_numbers():
    assert canonical({"a": 2}) == canonical({"a": 2.0}) and canonical([1]) != canonical([True])
    assert score('{"a": 2.0}', {"a": 2}) == (True, True)
    assert score("{", {}) == (False, False) and score(None, {}) == (False, False)


@pytest.mark.skipif(
    node_for(JSONREPAIR, "jsonrepair") is None,
    reason="needs Node 18+ and `npm ci` in src/diffusion_infill/bench/jsonrepair (install.sh does it)",
)
def test_both_peers_answer_every_case_in_order():
    broken = ["{a: 1,}", 'callback({"ok": true});', "[1, 2, ..."]
    for outputs in (json_repair_outputs(broken), jsonrepair_outputs(broken)):
        assert [json.loads(output) for output in outputs] == [{"a": 1}, {"ok": True}, [1, 2]]
