"""diffusion_infill.bench.closure_languages: the closure check on real files of one language, one JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FILES = Path(__file__).parents[1] / "engine" / "syntax_check_files"


def bench(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "diffusion_infill.bench.closure_languages", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_it_walks_a_directory_for_the_language_and_prints_one_json_line():
    run = bench("go", FILES, "--positions", "10", "--per-file", "10")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["language"] == "go" and result["files"] == result["clean_files"] == 1  # list.go only
    assert result["continuations"] == result["continuations_passed"] == 10
    assert result["retyped_closers"] == 10 and result["check_ms_p50"] > 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("klingon", FILES), "no grammar named 'klingon'"),
        (("cobol", FILES), "no grammar named 'cobol'"),
        (("rust", FILES / "list.go"), "no rust files under the paths given"),
        (("go", FILES, "--positions", "0"), "expected a positive integer"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, said):
    run = bench(*args)
    assert run.returncode == 2 and said in run.stderr and "Traceback" not in run.stderr
