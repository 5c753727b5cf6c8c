"""The denoising loop's settings and sampler.json, the values tuned per checkpoint
(diffusion_infill.engine.completion.denoise_settings)."""

import pytest

from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings, save_tuning


def test_settings_left_to_the_checkpoint_take_its_sampler_json(tmp_path):
    save_tuning(tmp_path, {"entropy_bound": 2.0, "stable_insertion": 3}, "test")

    tuned = DenoiseSettings().for_checkpoint(tmp_path)
    assert (tuned.entropy_bound, tuned.stable_insertion) == (2.0, 3)
    chosen = DenoiseSettings(entropy_bound=0.1).for_checkpoint(tmp_path)
    assert (chosen.entropy_bound, chosen.stable_insertion) == (0.1, 3)


def test_a_checkpoint_without_a_readable_sampler_json_keeps_the_defaults(tmp_path):
    assert DenoiseSettings().for_checkpoint(tmp_path) == DenoiseSettings()
    (tmp_path / "sampler.json").write_text("{not json")
    assert DenoiseSettings().for_checkpoint(tmp_path) == DenoiseSettings()
    assert DenoiseSettings().for_checkpoint(None) == DenoiseSettings()


def test_only_the_tuned_fields_are_saved(tmp_path):
    with pytest.raises(ValueError, match="max_steps"):
        save_tuning(tmp_path, {"max_steps": 3}, "test")
