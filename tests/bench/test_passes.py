"""diffusion_infill.bench.passes: where the passes go, and how the checkpoint's sampler.json is chosen."""

from __future__ import annotations

import subprocess
import sys

from diffusion_infill.bench.compare import CASE_SEED
from diffusion_infill.bench.passes import choose, stable_passes


def run(bound: float, similarity: float, exact: float, passes: float) -> tuple[dict, dict]:
    return {"entropy_bound": bound}, {
        "edit_similarity_mean": similarity,
        "exact_match": exact,
        "forward_passes_mean": passes,
    }


def test_the_fewest_passes_no_worse_than_the_reference_are_chosen():
    reference = run(0.5, 0.28, 0.03, 15.0)
    runs = [
        reference,
        run(1.0, 0.29, 0.03, 14.0),
        run(2.0, 0.29, 0.02, 12.0),
        run(4.0, 0.20, 0.03, 9.0),
        run(8.0, 0.28, 0.03, 13.0),
    ]
    assert choose(runs, reference[1])[0] == {"entropy_bound": 8.0}


def test_the_reference_is_kept_when_every_other_run_is_worse():
    reference = run(0.5, 0.28, 0.03, 15.0)
    runs = [reference, run(1.0, 0.27, 0.03, 14.0), run(2.0, 0.29, 0.0, 12.0)]
    assert choose(runs, reference[1])[0] == {"entropy_bound": 0.5}


def test_stability_is_the_longest_unfinal_run_and_at_least_one():
    rows = [{"pass_counts": {"unfinal_run": run}} for run in (2, 3, 0)]
    assert stable_passes({"rows": rows}) == 3
    assert stable_passes({"rows": rows[2:]}) == 1


def test_the_reported_cases_are_refused():
    command = [sys.executable, "-m", "diffusion_infill.bench.passes", "--case-seed", str(CASE_SEED)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "reported" in result.stderr.strip().splitlines()[-1]
