"""`diffusion-infill train` writes only inside its run directory unless told where else, never
over a checkpoint without `--force`, and an export leaves no calibration of older weights behind;
it says what it does while it runs, saves a checkpoint on Ctrl-C and says how to resume, and a
continuation trains as the recipe of its weights says."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
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


TINY = ("--shape", "1x64", "--max-prefix", "32", "--prefixes", "2", "--threads", "1")
STEP_LINE = re.compile(r"^train: step ([\d,]+)(/[\d,]+)? · loss [\d.]+ · [\d,]+ tokens/s( · \w+ left)?$")


def _tiny_run_dir(tmp_path: Path) -> Path:
    """A run directory holding the embedded model's tokenizer, so that none is trained (minutes)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(EMBEDDED_MODEL / name, run_dir / name)
    return run_dir


@pytest.mark.slow
def test_a_run_says_what_it_does_saves_on_ctrl_c_and_resumes_from_there(tmp_path):
    run_dir = _tiny_run_dir(tmp_path)
    command = [*CLI, "train", "--run-dir", str(run_dir), *TINY]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # A shell's background job starts with Ctrl-C ignored, and Python keeps it so: the run gets it as a terminal would
    default_interrupt = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
    running = subprocess.Popen(
        command, cwd=tmp_path, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_interrupt
    )
    said = []
    for line in running.stderr:
        said.append(line.rstrip("\n"))
        if sum(bool(STEP_LINE.match(line.rstrip("\n"))) for line in said) == 2:  # the first step's, one 5 s later
            running.send_signal(signal.SIGINT)
            break
    said += running.stderr.read().splitlines()
    assert running.wait(timeout=120) == 130, said
    assert said[0] == "train: reading the corpus" and said[2] == "train: making the model"
    assert re.fullmatch(r"train: tokenizing [\d,]+ files", said[1])  # as many as this machine's corpus has
    match = re.fullmatch(
        r"train: interrupted at step ([\d,]+), saved in (.+); resume with: diffusion-infill (.+)", said[-1]
    )
    assert match and match[2] == str(run_dir / "checkpoint.pt"), said
    assert not any("Traceback" in line for line in said)
    stopped = int(match[1].replace(",", ""))
    assert shlex.split(match[3]) == ["train", "--run-dir", str(run_dir), *TINY]

    resumed = _train(tmp_path, "--run-dir", str(run_dir), *TINY, "--max-steps", str(stopped + 2))
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stderr.splitlines()
    assert f"train: resumed from {run_dir / 'checkpoint.pt'} at step {stopped:,}" in lines
    first = next(STEP_LINE.match(line) for line in lines if STEP_LINE.match(line))
    assert first[1] == f"{stopped + 1:,}" and first[2] == f"/{stopped + 2:,}" and first[3]  # bounded: time left
    assert json.loads((run_dir / "model" / "recipe.json").read_text())["step"] == stopped + 2


@pytest.mark.slow
def test_a_continuation_trains_as_its_recipe_says_and_keeps_its_gate_with_a_warning(tmp_path):
    """The embedded model was trained with `--after-end pad` in bf16 (its recipe.json)."""
    export = tmp_path / "continued"
    recipe = json.loads((EMBEDDED_MODEL / "recipe.json").read_text())
    steps = str(recipe["step"] + 1)
    done = _train(tmp_path, "--init-from", str(EMBEDDED_MODEL), "--run-dir", "run", "--export", str(export),
                  "--prefixes", "2", "--threads", "1", "--max-steps", steps)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"train: continuing from {EMBEDDED_MODEL} as its recipe.json says: --precision bf16, --after-end pad "
        "(give an option to change it)"
    ) in done.stderr.splitlines()
    config = json.loads((export / "recipe.json").read_text())["config"]
    assert (config["precision"], config["objective"]["after_end"]) == ("bf16", "pad")
    assert (export / "confidence.json").read_bytes() == (EMBEDDED_MODEL / "confidence.json").read_bytes()
    assert f"with the confidence gate of {EMBEDDED_MODEL}, which was fitted for those weights, not these" in done.stdout


def test_options_not_given_come_from_the_recipe_continued_from_and_given_ones_win(tmp_path):
    from diffusion_infill.cli import train
    from diffusion_infill.cli.main import build_parser

    config = {"precision": "bf16", "noise": "mask", "objective": {"after_end": "pad", "weighting": "plain"}}
    (tmp_path / "recipe.json").write_text(json.dumps({"step": 3, "cpu_hours": 0.1, "config": config}))
    args = build_parser("train").parse_args(["train", "--init-from", str(tmp_path), "--weighting", "inverse_t"])
    assert train.inherit(args) == ["--precision bf16", "--after-end pad"]  # mask is the default: nothing to say
    assert (args.precision, args.after_end, args.weighting, args.noise, args.max_prefix) == (
        "bf16",
        "pad",
        "inverse_t",
        "mask",
        128,
    )
    fresh = build_parser("train").parse_args(["train"])
    assert train.inherit(fresh) == [] and (fresh.precision, fresh.after_end, fresh.objective) == (
        "fp32",
        "ignore",
        "diffusion",
    )


def test_init_from_a_folder_that_is_not_there_is_one_line(tmp_path):
    done = _train(tmp_path, "--init-from", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and done.stderr.splitlines() == [
        f"diffusion-infill: --init-from {tmp_path / 'nowhere'}: no such directory"
    ]
