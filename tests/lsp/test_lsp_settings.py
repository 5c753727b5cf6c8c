"""The `diffusionInfill` settings section (lsp.settings): each value checked, a bad one kept at its
previous setting and reported, a number outside its range clamped to it, empty or missing sections ignored."""

import re
from pathlib import Path

import pytest

from diffusion_infill.lsp import settings as settings_module
from diffusion_infill.lsp.settings import RANGES, ServerSettings, initialization_section, merge, section_of


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


# Ranges: a workspace's counts, sizes and times are clamped (lsp.settings.RANGES, docs/protocol.md)

PROTOCOL_MD = Path(__file__).parents[2] / "docs" / "protocol.md"
KEY_OF = {name: key for key, (name, _) in settings_module._KEYS.items()}


@pytest.mark.parametrize("name", sorted(RANGES))
def test_a_number_outside_its_range_is_clamped_to_it_with_one_line_each(name):
    low, high = RANGES[name]
    key = KEY_OF[name]
    for given, bound, side in ((high * 1000, high, "more"), (low / 1000 if low < 1 else low - 1, low, "less")):
        settings, [problem] = merge(ServerSettings(), {key: given})
        assert getattr(settings, name) == bound and type(getattr(settings, name)) is type(given)
        assert problem.startswith(f"diffusionInfill.{key}: ") and f"is {side} than it may be" in problem
    inside, problems = merge(ServerSettings(), {key: high})
    assert getattr(inside, name) == high and problems == []


def test_each_range_is_the_one_docs_protocol_md_gives():
    rows = dict(re.findall(r"^\| `(\w+)` \| ([\d.]+ to [\d.]+)", PROTOCOL_MD.read_text(), re.MULTILINE))
    assert {KEY_OF[name]: f"{low:g} to {high:g}" for name, (low, high) in RANGES.items()} == rows


def test_a_wrong_type_is_still_refused_and_keeps_the_previous_value():
    settings, [problem] = merge(ServerSettings(invoked_items=4), {"invokedItems": "many"})
    assert settings.invoked_items == 4 and "expected an integer" in problem
    settings, [problem] = merge(ServerSettings(), {"timeout": float("nan")})
    assert settings.timeout == ServerSettings().timeout and "expected a number" in problem


@pytest.mark.parametrize(
    "key, value",
    [
        ("url", "http://gpu-box:8000/" + "v" * 5000),
        ("model", "m" * 5000),
        ("enabledLanguages", ["python"] * 1001),
        ("enabledLanguages", ["p" * 5000]),
        ("quietAfter", ":" * 101),
    ],
)
def test_text_and_lists_over_their_size_are_refused_and_the_message_stays_short(key, value):
    settings, [problem] = merge(ServerSettings(), {key: value})
    assert settings == ServerSettings() and "at most" in problem and len(problem) < 300


def test_one_message_lists_ten_problems_and_counts_the_rest():
    _, problems = merge(ServerSettings(), {f"colour{index}": "red" for index in range(25)} | {"x" * 10**6: 1})
    assert len(problems) == 11 and problems[-1] == "16 more"
    assert sum(len(problem) for problem in problems) < 4000
