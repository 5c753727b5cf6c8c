"""The distribution installs one import package, named for it: no generic top-level `cli`,
`engine`, `lsp`, `bench` or `clients` that another project's packages could clash with."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

GENERIC = ("cli", "engine", "lsp", "bench", "clients")


def test_the_distribution_has_one_top_level_package():
    top_level = importlib.metadata.distribution("diffusion-infill").read_text("top_level.txt")
    assert top_level.split() == ["diffusion_infill"]


def test_outside_the_checkout_no_generic_name_imports(tmp_path):
    probe = f"import importlib.util; print([n for n in {GENERIC!r} if importlib.util.find_spec(n)])"
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
    command = [sys.executable, "-c", "import diffusion_infill.cli.main"]
    assert subprocess.run(command, cwd=tmp_path, capture_output=True).returncode == 0
