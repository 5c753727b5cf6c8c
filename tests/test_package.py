"""The distribution installs one import package, named for it: no generic top-level `cli`,
`engine`, `lsp`, `bench` or `clients` that another project's packages could clash with; and it
carries what the language server needs, not the benchmark's data."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

GENERIC = ("cli", "engine", "lsp", "bench", "clients")
ROOT = Path(__file__).resolve().parents[1]


def test_the_distribution_has_one_top_level_package():
    top_level = importlib.metadata.distribution("diffusion-infill").read_text("top_level.txt")
    assert top_level.split() == ["diffusion_infill"]


def test_outside_the_checkout_no_generic_name_imports(tmp_path):
    probe = f"import importlib.util; print([n for n in {GENERIC!r} if importlib.util.find_spec(n)])"
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
    command = [sys.executable, "-c", "import diffusion_infill.cli.main"]
    assert subprocess.run(command, cwd=tmp_path, capture_output=True).returncode == 0


@pytest.mark.slow  # builds a wheel: about 10 s
def test_the_wheel_carries_the_embedded_model_but_no_benchmark_data(tmp_path):
    """Users get the language server: the benchmark's baseline checkpoint, its npm peers and its results stay in
    the checkout (pyproject's exclude-package-data)."""
    source = tmp_path / "source"
    shutil.copytree(
        ROOT / "src", source / "src", ignore=shutil.ignore_patterns("node_modules", "*.egg-info", "__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "wheel"),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    [wheel] = (tmp_path / "wheel").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "diffusion_infill/engine/model/model.safetensors" in names
    assert "diffusion_infill/cli/samples/broken.json" in names
    bench = [name for name in names if name.startswith("diffusion_infill/bench/")]
    assert "diffusion_infill/bench/compare.py" in bench
    assert [name for name in bench if not name.endswith(".py")] == []
