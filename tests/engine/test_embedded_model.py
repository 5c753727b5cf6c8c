"""The embedded model (src/diffusion_infill/engine/model) on held-out stdlib files, which training never read.

Thresholds are the numbers measured for docs/training.md ("The long run") less a margin,
so that a worse checkpoint or a broken decoding path fails here.
"""

from __future__ import annotations

import pytest
import torch

from diffusion_infill.bench.heldout import CASE_SEED, context_gain
from diffusion_infill.bench.metrics import aggregate, run_case
from diffusion_infill.engine.factory import create_engine
from diffusion_infill.engine.loading import load
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.training.probes import held_out_line_cases

pytestmark = [pytest.mark.model, pytest.mark.slow]

CASES = 24
MEASURED_EDIT_SIMILARITY = 0.295  # median on these 24 cases, step-39114 model
MEASURED_CONTEXT_GAIN = 7.5  # nats, step-39114 model (docs/training.md, The long run)


@pytest.fixture(scope="module")
def loaded():
    return load()


@pytest.fixture(scope="module")
def heldout(loaded):
    torch.manual_seed(0)
    engine = create_engine(loaded, EngineSettings(mode="single-line"))
    rows = [
        run_case(engine, case, loaded.tokenizer, prefill_passes=1)
        for case in held_out_line_cases(CASES, seed=CASE_SEED)
    ]
    return {**aggregate(rows), "rows": rows}


def test_the_embedded_model_is_trained_on_the_clamped_canvas(loaded):
    assert loaded.spec is not None and loaded.spec.noise in ("mask", "uniform")


def test_no_held_out_completion_breaks_closure(heldout):
    assert heldout["closure_valid"] == 1.0


def test_held_out_completions_are_as_close_as_measured(heldout):
    assert heldout["edit_similarity_median"] >= MEASURED_EDIT_SIMILARITY - 0.05


def test_a_completion_is_empty_only_where_the_closure_check_kept_nothing(heldout):
    """END is kept out of the first slot by default (min_insertion_tokens), so the model always
    writes something; only the closure cut may leave nothing of it."""
    empty = [row for row in heldout["rows"] if not row["text"]]
    assert all(row["cut"] for row in empty), [row["name"] for row in empty if not row["cut"]]


def test_the_first_slot_reads_the_prefix(loaded):
    assert context_gain(loaded) >= MEASURED_CONTEXT_GAIN - 0.1
