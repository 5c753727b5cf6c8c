"""`complete --model` on an instruction-tuned checkpoint (no infill.json): its own generation_config
is what denoises, unless sampler.json or a setting says otherwise, and a one-line answer gets a
short canvas (engine.completion.instruct)."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest
import torch
from transformers import DiffusionGemmaForBlockDiffusion
from transformers.models.diffusion_gemma.generation_diffusion_gemma import (
    DiffusionGemmaGenerationConfig,
    EntropyBoundSamplerConfig,
)

from diffusion_infill.bench.throughput import Shape, diffusion_model
from diffusion_infill.cli.main import main
from diffusion_infill.engine.completion.instruct import LINE_CANVAS
from tests.engine.completion.test_instruct import CHAT_TEMPLATE

# 26B-A4B's layout at a test's size (sliding and full layers, experts 64 wide: the int4 group)
SHAPE = Shape(6, 64, 96, 4, 2, 1, 16, 32, 4, 2, 64, vocab=256, sliding_window=128)
# unlike transformers' defaults (48 steps, bound 0.1, t 0.4-0.8, stability 1, confidence 0.005:
# generation_diffusion_gemma.py:227-235) and unlike DenoiseSettings', so each can be told apart
CHECKPOINT = dict(max_denoising_steps=5, t_min=0.3, t_max=0.9, stability_threshold=2, confidence_threshold=0.002)
CHECKPOINT_BOUND = 0.25
CANVAS = 128


@pytest.fixture(scope="module")
def instruct_dir(tmp_path_factory, tiny_tokenizer):
    directory = tmp_path_factory.mktemp("instruct")
    torch.manual_seed(0)
    model = diffusion_model(replace(SHAPE, vocab=len(tiny_tokenizer)), canvas=CANVAS, dtype=torch.float32)
    model.generation_config = DiffusionGemmaGenerationConfig(
        **CHECKPOINT,
        sampler_config=EntropyBoundSamplerConfig(entropy_bound=CHECKPOINT_BOUND),
        bos_token_id=2,
        eos_token_id=1,
    )
    model.save_pretrained(directory)
    tokenizer = copy.deepcopy(tiny_tokenizer)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture
def generated(monkeypatch):
    """Every generation_config and canvas length generate ran with: what its own preparation returned."""
    seen = []
    prepare = DiffusionGemmaForBlockDiffusion._prepare_generation_config

    def recording(self, *args, **kwargs):
        config, model_kwargs = prepare(self, *args, **kwargs)
        seen.append((config, self.config.canvas_length))
        return config, model_kwargs

    monkeypatch.setattr(DiffusionGemmaForBlockDiffusion, "_prepare_generation_config", recording)
    return seen


def run_complete(directory, tmp_path, *options: str) -> None:
    source = tmp_path / "area.py"
    source.write_text("def area(width, height):\n    return \n")
    assert main(["complete", f"{source}:2:12", "--model", str(directory), "--device", "cpu", *options]) == 0


def test_the_checkpoints_generation_config_is_what_denoises(instruct_dir, tmp_path, generated):
    run_complete(instruct_dir, tmp_path)
    (config, canvas), *_ = generated
    assert {name: getattr(config, name) for name in CHECKPOINT} == CHECKPOINT
    assert config.sampler_config.entropy_bound == CHECKPOINT_BOUND
    assert canvas == LINE_CANVAS < CANVAS  # one line: a short canvas, not the checkpoint's 128


def test_a_setting_and_sampler_json_win_over_the_checkpoint(instruct_dir, tmp_path, generated):
    (instruct_dir / "sampler.json").write_text('{"t_min": 0.2}')
    try:
        run_complete(instruct_dir, tmp_path, "--max-steps", "3", "--entropy-bound", "0.7", "--max-gap-tokens", "16")
    finally:
        (instruct_dir / "sampler.json").unlink()
    (config, canvas), *_ = generated
    assert (config.max_denoising_steps, config.sampler_config.entropy_bound, config.t_min) == (3, 0.7, 0.2)
    assert (config.t_max, config.stability_threshold) == (CHECKPOINT["t_max"], CHECKPOINT["stability_threshold"])
    assert canvas == 16


def test_a_setting_given_at_the_clamped_canvas_default_still_wins_over_the_checkpoint(
    instruct_dir, tmp_path, generated
):
    # 24 is what the clamped-canvas sampler runs when nothing is said; said out loud on an instruction
    # checkpoint it must reach generate, not fall back to the checkpoint's 5 (issue 50)
    run_complete(instruct_dir, tmp_path, "--max-steps", "24")
    (config, _), *_ = generated
    assert config.max_denoising_steps == 24 != CHECKPOINT["max_denoising_steps"]
