"""The denoising loop's settings and sampler.json, the values tuned per checkpoint
(diffusion_infill.engine.completion.denoise_settings)."""

import logging

import pytest

from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings, save_tuning


def test_settings_left_to_the_checkpoint_take_its_sampler_json(tmp_path):
    save_tuning(tmp_path, {"entropy_bound": 2.0, "stable_insertion": 3}, "test")

    tuned = DenoiseSettings().for_checkpoint(tmp_path)
    assert (tuned.entropy_bound, tuned.stable_insertion) == (2.0, 3)
    chosen = DenoiseSettings(entropy_bound=0.1).for_checkpoint(tmp_path)
    assert (chosen.entropy_bound, chosen.stable_insertion) == (0.1, 3)


def test_a_checkpoint_without_sampler_json_keeps_the_defaults_silently(tmp_path, caplog):
    assert DenoiseSettings().for_checkpoint(tmp_path) == DenoiseSettings()
    assert DenoiseSettings().for_checkpoint(None) == DenoiseSettings()
    assert caplog.records == []


@pytest.mark.parametrize("content", ["{not json", "[0.5]", ""])
def test_an_unreadable_sampler_json_keeps_the_defaults_with_a_warning_naming_the_file_and_the_settings(
    tmp_path, caplog, content
):
    (tmp_path / "sampler.json").write_text(content)
    assert DenoiseSettings().for_checkpoint(tmp_path) == DenoiseSettings()
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert str(tmp_path / "sampler.json") in message
    assert all(name in message for name in ("entropy_bound", "t_min", "t_max", "stable_insertion"))


def test_a_bad_value_in_sampler_json_is_dropped_alone_and_named(tmp_path, caplog):
    (tmp_path / "sampler.json").write_text('{"entropy_bound": "lots", "t_min": 0.2, "stable_insertion": 1.5}')
    tuned = DenoiseSettings().for_checkpoint(tmp_path)
    assert (tuned.entropy_bound, tuned.t_min, tuned.stable_insertion) == (None, 0.2, None)
    [record] = caplog.records
    message = record.getMessage()
    assert "entropy_bound='lots'" in message and "stable_insertion=1.5" in message and "t_min" not in message
    assert str(tmp_path / "sampler.json") in message


def test_only_the_tuned_fields_are_saved(tmp_path):
    with pytest.raises(ValueError, match="max_steps"):
        save_tuning(tmp_path, {"max_steps": 3}, "test")
