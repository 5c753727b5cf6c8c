"""bench.passes: where the passes go, and how the checkpoint's sampler.json is chosen."""

from __future__ import annotations

import subprocess
import sys

from bench.compare import CASE_SEED
from bench.passes import choose_bound, stable_passes


def run(bound: float, similarity: float, exact: float) -> tuple[float, dict]:
    return bound, {"edit_similarity_mean": similarity, "exact_match": exact}


def test_the_largest_bound_no_worse_than_the_reference_is_chosen():
    runs = dict([run(0.25, 0.30, 0.05), run(0.5, 0.28, 0.03), run(1.0, 0.29, 0.03), run(2.0, 0.29, 0.02),
                 run(4.0, 0.20, 0.03)])
    assert choose_bound(runs, 0.5) == 1.0


def test_the_reference_is_kept_when_every_larger_bound_is_worse():
    runs = dict([run(0.5, 0.28, 0.03), run(1.0, 0.27, 0.03), run(2.0, 0.29, 0.0)])
    assert choose_bound(runs, 0.5) == 0.5


def test_stability_is_the_longest_unfinal_run_and_at_least_one():
    rows = [{"pass_counts": {"unfinal_run": run}} for run in (2, 3, 0)]
    assert stable_passes({"rows": rows}) == 3
    assert stable_passes({"rows": rows[2:]}) == 1


def test_the_reported_cases_are_refused():
    result = subprocess.run([sys.executable, "-m", "bench.passes", "--case-seed", str(CASE_SEED)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert "reported" in result.stderr.strip().splitlines()[-1]
