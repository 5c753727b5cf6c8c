"""Specification of the throughput benchmark (diffusion_infill.bench.throughput) and of the GPU command
that runs it (scripts/gpu_throughput.sh), on the CPU with the small shape."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from diffusion_infill.bench.throughput import SHAPES, causal_model, diffusion_model
from diffusion_infill.engine.quantization import INT4_GROUP, is_quantized_weight

ROOT = Path(__file__).resolve().parents[2]
TINY_RUN = ["--shape", "small", "--steps", "2", "--canvas", "8", "--prefix", "8", "--canvases", "1"]


def throughput(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "diffusion_infill.bench.throughput", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
    )


def test_the_full_shape_is_26b_a4b_text_model():
    """25.2 billion parameters published with the vision tower; its text model, either side, counted on
    the meta device (no memory): 128 experts hold nearly all of it, 8 of them active per token."""
    with torch.device("meta"):
        sides = [diffusion_model(SHAPES["full"], 256, torch.bfloat16), causal_model(SHAPES["full"], torch.bfloat16)]
    for model in sides:
        total = sum(p.numel() for p in model.parameters())
        experts = sum(p.numel() for name, p in model.named_parameters() if ".experts." in name)
        assert 25.0e9 < total < 25.5e9
        assert 0.9 < experts / total < 0.91
    layers = sides[0].config.text_config.layer_types
    assert layers.count("full_attention") == 5 and layers[-1] == "full_attention"


def test_every_weight_int4_stores_of_the_full_shape_is_a_whole_number_of_groups_wide():
    """torchao leaves a weight whose input width is no multiple of the group in bfloat16, silently:
    26B-A4B's experts are 704 wide and its dense MLP 2112, so groups of 128 would keep 15 GB of
    expert weights unquantized on the card (engine.quantization.INT4_GROUP)."""
    with torch.device("meta"):
        model = diffusion_model(SHAPES["full"], 256, torch.bfloat16)
    widths = {parameter.shape[-1] for name, parameter in model.named_parameters() if is_quantized_weight(name)}

    assert {704, 2112, 2816} <= widths
    assert all(width % INT4_GROUP == 0 for width in widths), sorted(widths)


@pytest.mark.slow
@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_one_json_line_compares_a_canvas_with_as_many_decoded_tokens(quantize):
    done = throughput(*TINY_RUN, "--quantize", quantize)

    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    diffusion, autoregressive = result["diffusion"], result["autoregressive"]
    assert diffusion["forward_passes"] == 2 + 2  # prompt, 2 denoising passes, the commit
    assert autoregressive["forward_passes"] == 8
    for side in (diffusion, autoregressive):
        assert side["tokens_per_s"] > 0 and side["step_ms_median"] > 0 and side["peak_memory_mb"] > side["weights_mb"]
    if quantize == "int8":  # int8 layer weights: well under half of float32
        assert diffusion["weights_mb"] < 0.5 * diffusion["parameters"] * 4 / 2**20
    assert "| diffusion |" in done.stdout and "| autoregressive |" in done.stdout


def test_int4_on_the_cpu_is_one_line():
    done = throughput("--quantize", "int4", "--device", "cpu")

    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "int4 needs a CUDA GPU" in done.stderr and len(done.stderr.splitlines()) == 1


@pytest.mark.slow
def test_the_gpu_command_runs_on_the_cpu_with_the_small_shape(tmp_path):
    env = os.environ | {
        "OUT": str(tmp_path),
        "DEVICE": "cpu",
        "SHAPE": "small",
        "MODES": "none int8",
        "STEPS": "1",
        "CANVAS": "8",
        "CANVASES": "1",
        "PYTHON": sys.executable,
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run(
        ["bash", "scripts/gpu_throughput.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )

    assert done.returncode == 0, done.stdout + done.stderr
    for mode in ("none", "int8"):
        table = (tmp_path / f"throughput-small-{mode}.md").read_text()
        assert json.loads(table.splitlines()[-1])["run"]["quantize"] == mode
