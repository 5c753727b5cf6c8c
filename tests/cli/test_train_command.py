"""`diffusion-infill train` writes only inside its run directory unless told where else, never
over a checkpoint without `--force`, and an export leaves no calibration of older weights behind."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest
from commands import CLI

from diffusion_infill.bench.compare import BASELINE_MODEL
from diffusion_infill.engine.loading import EMBEDDED_MODEL

PACKAGE = EMBEDDED_MODEL.parents[1]  # src/diffusion_infill
EXPORTED = {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "infill.json", "recipe.json"}


def _hashes(folder: Path) -> dict[str, str]:
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _train(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "train", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_an_export_over_a_checkpoint_asks_for_force(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    done = _train(tmp_path, "--export", str(tmp_path))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"diffusion-infill: {tmp_path} already holds a checkpoint; pass --force to "
        "replace it (its calibration goes with it), or leave out --export to keep "
        "the weights in the run directory"
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["config.json"]


@pytest.mark.slow
def test_training_writes_only_inside_its_run_directory(tmp_path):
    """As a newcomer would from the checkout, then resumed with the default run directory and
    exported over a calibrated checkpoint."""
    before = {folder: _hashes(folder) for folder in (EMBEDDED_MODEL, BASELINE_MODEL)}
    done = _train(PACKAGE.parents[1], "--max-steps", "1", "--run-dir", str(tmp_path / "runs" / "tiny"))
    assert done.returncode == 0, done.stderr
    assert {folder: _hashes(folder) for folder in before} == before
    export = tmp_path / "runs" / "tiny" / "model"
    assert {path.name for path in export.iterdir()} >= EXPORTED
    assert not (export / "confidence.json").exists()
    assert f"weights exported to {export}, uncalibrated" in done.stdout

    target = tmp_path / "calibrated"
    target.mkdir()
    for name in ("config.json", "confidence.json", "sampler.json", "README.md"):
        (target / name).write_text("{}")
    done = _train(tmp_path, "--max-steps", "1", "--export", str(target), "--force")
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["calibrated", "runs"]
    assert {path.name for path in target.iterdir()} == EXPORTED | {"README.md", "generation_config.json"}
    assert json.loads((target / "config.json").read_text()) == json.loads((export / "config.json").read_text())
    assert (target / "model.safetensors").read_bytes() == (export / "model.safetensors").read_bytes()
