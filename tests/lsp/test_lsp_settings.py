"""The `diffusionInfill` settings section (lsp.settings): each value checked, a bad one kept at its
previous setting and reported, empty or missing sections ignored."""

import pytest

from diffusion_infill.lsp.settings import ServerSettings, initialization_section, merge, section_of


def test_settings_merge_keeps_good_values_and_reports_bad_ones():
    section = section_of(
        {
            "diffusionInfill": {
                "maxSteps": 8,
                "mode": "sideways",
                "entropyBound": -1,
                "enabledLanguages": ["python"],
                "colour": "red",
            }
        }
    )
    settings, problems = merge(ServerSettings(), section)
    assert settings.max_steps == 8 and settings.enabled_languages == ("python",)
    assert settings.mode == "auto" and settings.entropy_bound is None
    assert len(problems) == 3 and any("colour" in p for p in problems) and any("sideways" in p for p in problems)
    assert settings.engine_settings().denoise.max_steps == 8
    assert settings.enabled_for("python") and not settings.enabled_for("markdown")


@pytest.mark.parametrize(
    "payload",
    [
        {"diffusionInfill": []},  # Neovim: an empty Lua table is encoded as a JSON array
        {"diffusionInfill": None},
        {"diffusionInfill": {}},
        [],
        None,
        {},
    ],
)
def test_empty_or_missing_sections_change_nothing_and_say_nothing(payload):
    for section in (section_of(payload), initialization_section(payload)):
        assert merge(ServerSettings(), section) == (ServerSettings(), [])


def test_initialization_options_may_hold_the_keys_directly_and_a_non_object_section_is_reported():
    assert merge(ServerSettings(), initialization_section({"maxSteps": 4}))[0].max_steps == 4
    settings, [problem] = merge(ServerSettings(), section_of({"diffusionInfill": "fast"}))
    assert settings == ServerSettings() and "expected an object" in problem


def test_document_drafts_are_on_by_default_and_take_true_or_false_only():
    assert ServerSettings().document_drafts
    assert not merge(ServerSettings(), {"documentDrafts": False})[0].document_drafts
    settings, [problem] = merge(ServerSettings(), {"documentDrafts": "no"})
    assert settings.document_drafts and "documentDrafts" in problem and "true or false" in problem


def test_quantize_is_none_by_default_takes_a_known_mode_and_loads_the_model_again():
    assert ServerSettings().quantize == "none"
    int8, problems = merge(ServerSettings(), {"quantize": "int8"})
    assert int8.quantize == "int8" and problems == []
    assert int8.model_key() != ServerSettings().model_key()  # a new quantization is a new load
    settings, [problem] = merge(int8, {"quantize": "int2"})
    assert settings.quantize == "int8" and "quantize" in problem and "int8" in problem


def test_a_document_drafts_setting_switched_off_also_switches_off_judged_lines_and_prompt_lookup():
    assert ServerSettings().engine_settings().document_drafts
    assert not ServerSettings(document_drafts=False).engine_settings().document_drafts
