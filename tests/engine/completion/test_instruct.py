"""The instruction path: a checkpoint without infill.json answers through a chat prompt
and its own `generate`, streaming drafts, and still never breaks closure."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from diffusion_infill.engine.completion.chat_prompt import answer_text
from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings
from diffusion_infill.engine.completion.instruct import GENERATE_NAMES, InstructEngine, generate_overrides
from diffusion_infill.engine.factory import create_engine
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings

CHAT_TEMPLATE = (
    "{% for message in messages %}<bos>{{ message['role'] }}\n{{ message['content'] }}<eos>{% endfor %}"
    "{% if add_generation_prompt %}<bos>model\n{% endif %}"
)


@pytest.fixture(scope="module")
def chat_loaded(tiny_loaded):
    tokenizer = copy.deepcopy(tiny_loaded.tokenizer)
    tokenizer.chat_template = CHAT_TEMPLATE
    return dataclasses.replace(tiny_loaded, tokenizer=tokenizer, spec=None, ids=None, source="tiny-chat")


@pytest.fixture(scope="module")
def engine(chat_loaded):
    settings = EngineSettings(max_gap_tokens=8, mode="multi-line", denoise=DenoiseSettings(max_steps=4))
    return create_engine(chat_loaded, settings)


def test_a_checkpoint_without_canvas_spec_gets_the_instruction_engine(engine):
    assert isinstance(engine, InstructEngine)


def test_the_prompt_holds_prefix_cursor_and_suffix(engine):
    ids = engine.prompt_ids(InfillRequest("def f(x):\n    return ", "\n", "python"))
    prompt = engine.loaded.tokenizer.decode(ids[0])
    assert "def f(x):\n    return <CURSOR>\n" in prompt
    assert prompt.endswith("model\n")


def test_drafts_stream_then_one_final_closure_valid_answer(engine):
    drafts = list(engine.complete(InfillRequest("print(len(", "))\n", "python")))
    assert [d.final for d in drafts].count(True) == 1 and drafts[-1].final
    assert len(drafts) > 1
    assert [d.step for d in drafts[:-1]] == list(range(1, len(drafts)))
    assert drafts[-1].valid


def test_cancelling_stops_generation_without_a_final_draft(engine):
    drafts = []
    for draft in engine.complete(InfillRequest("x = [", "]\n", "python"), cancelled=lambda: bool(drafts)):
        drafts.append(draft)
    assert drafts and not any(d.final for d in drafts)


def test_answer_text_strips_a_code_fence_and_nothing_else():
    assert answer_text("```python\nreturn x\n```") == "return x"
    assert answer_text("\n```python\nreturn x\n```\n") == "return x"
    # a line break of the insertion's own (issue 50: the strip dropped it)
    assert answer_text("\nreturn x\n") == "\nreturn x\n"


@pytest.mark.parametrize("name", sorted(GENERATE_NAMES))
def test_every_denoise_setting_given_reaches_generate_even_at_the_clamped_canvas_default(name):
    # what the clamped-canvas sampler would run with this setting left unsaid
    value = dataclasses.asdict(DenoiseSettings().resolved())[name]
    overrides = generate_overrides(DenoiseSettings(**{name: value}), directory=None)
    told = overrides[GENERATE_NAMES[name]]
    assert (told.entropy_bound if name == "entropy_bound" else told) == value


def test_settings_left_unsaid_are_the_checkpoints_generation_config():
    assert generate_overrides(DenoiseSettings(), directory=None) == {}
