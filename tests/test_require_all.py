"""DIFFUSION_INFILL_REQUIRE_ALL=1 turns a skip into a failure (tests/require_all.py), as .ci/run sets it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from require_all import REQUIRE_ALL

PROBE = """
import pytest


def test_needs_a_tool():
    pytest.skip("no such tool")


@pytest.mark.skipif(True, reason="no such peer")
def test_needs_a_peer():
    pass
"""


def run_probe(tmp_path: Path, require_all: bool) -> subprocess.CompletedProcess:
    (tmp_path / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
    env.pop(REQUIRE_ALL, None)
    if require_all:
        env[REQUIRE_ALL] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "require_all",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path / "test_probe.py"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )


def test_a_skip_passes_by_default_and_fails_under_the_flag(tmp_path):
    relaxed = run_probe(tmp_path, require_all=False)
    assert relaxed.returncode == 0 and "2 skipped" in relaxed.stdout, relaxed.stdout
    strict = run_probe(tmp_path, require_all=True)
    assert strict.returncode == 1 and "1 failed, 1 error" in strict.stdout, strict.stdout  # skipif: at setup
    assert "no such tool" in strict.stdout and "no such peer" in strict.stdout


def test_ci_sets_the_flag():
    ci = (Path(__file__).parents[1] / ".ci" / "run").read_text()
    assert f"{REQUIRE_ALL}=1 .venv/bin/python -m pytest" in ci
