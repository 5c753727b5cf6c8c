"""Completions from an instruction-tuned checkpoint not trained on the clamped canvas
(e.g. google/diffusiongemma-26B-A4B-it): the prefix and suffix go into a chat prompt that
asks for only the missing code, and the model's own `generate` answers on a plain canvas
while a draft streamer reports every denoising step."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import fields

import torch
from transformers.generation.streamers import BaseStreamer
from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion.chat_prompt import answer_text, instruction
from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings, load_tuning
from diffusion_infill.engine.loading import LoadedModel
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.streaming import Cancelled, stream_from_thread

# The denoising settings `generate` takes, by their name in DenoiseSettings. Left out, generate uses
# the checkpoint's generation_config.json, then transformers' defaults (48 steps, entropy bound 0.1,
# t 0.4 to 0.8, stability 1, confidence 0.005: generation_diffusion_gemma.py:227-235); a value passed
# wins over both (_prepare_generation_config, generation_diffusion_gemma.py:866-874).
GENERATE_NAMES = {
    "max_steps": "max_denoising_steps",
    "entropy_bound": "sampler_config",
    "t_min": "t_min",
    "t_max": "t_max",
    "stability_threshold": "stability_threshold",
    "confidence_threshold": "confidence_threshold",
}
# Slots of the canvas for a one-line answer: generate denoises config.canvas_length slots a canvas
# (256 for 26B-A4B), and a step's cost grows with them (docs/performance.md, "The instruction
# path's canvas"); a longer answer goes on in a next canvas. 64: vLLM's 24 GB serving report's.
LINE_CANVAS = 64


def generate_overrides(denoise: DenoiseSettings, directory: str | None) -> dict:
    """What `generate` is told: the checkpoint's sampler.json values and every setting given (not
    None); everything else is the checkpoint's own generation_config."""
    given = {f.name: getattr(denoise, f.name) for f in fields(denoise) if getattr(denoise, f.name) is not None}
    chosen = {**load_tuning(directory), **given}
    overrides = {GENERATE_NAMES[k]: v for k, v in chosen.items() if k in GENERATE_NAMES}
    if "sampler_config" in overrides:
        overrides["sampler_config"] = EntropyBoundSamplerConfig(entropy_bound=float(overrides["sampler_config"]))
    return overrides


@contextmanager
def canvas_of(model, slots: int):
    """The model's generate with `slots` slots a canvas: generate reads config.canvas_length
    (generation_diffusion_gemma.py:652, 670); the decoder takes any canvas (its inputs' shape)."""
    kept = model.config.canvas_length
    model.config.canvas_length = slots
    try:
        yield
    finally:
        model.config.canvas_length = kept


class DraftStreamer(BaseStreamer):
    """Receives `put_draft` after every denoising step and forwards the decoded answer."""

    def __init__(self, tokenizer, on_draft: Callable[[str], None], cancelled: Callable[[], bool]):
        self.tokenizer, self.on_draft, self.cancelled = tokenizer, on_draft, cancelled
        self.answer: list[int] = []  # tokens of finished canvases
        self.prompt_seen = False

    def put(self, value: torch.Tensor) -> None:
        if not self.prompt_seen:  # generate() first puts the prompt
            self.prompt_seen = True
            return
        self.answer += value.reshape(-1).tolist()

    def put_draft(self, value: torch.Tensor, **kwargs) -> None:
        if self.cancelled():
            raise Cancelled
        text = self.tokenizer.decode(self.answer + value.reshape(-1).tolist(), skip_special_tokens=True)
        self.on_draft(text)

    def end(self) -> None:
        pass


class InstructEngine:
    def __init__(self, loaded: LoadedModel, settings: EngineSettings | None = None):
        self.loaded = loaded
        self.settings = settings or EngineSettings()

    def prompt_ids(self, request: InfillRequest) -> torch.Tensor:
        ids = self.loaded.tokenizer.apply_chat_template(
            [{"role": "user", "content": instruction(request)}],
            tokenize=True,
            add_generation_prompt=True,
            return_dict=True,
        )["input_ids"]
        return torch.tensor([ids], device=self.loaded.device)

    def canvas_slots(self, request: InfillRequest) -> int:
        """Slots for the answer: max_gap_tokens where set, else LINE_CANVAS for one line and the
        checkpoint's canvas for more; never past the checkpoint's canvas (what it was trained on)."""
        trained = self.loaded.model.config.canvas_length
        wanted = self.settings.max_gap_tokens or (trained if self.settings.multi_line(request.prefix) else LINE_CANVAS)
        return min(wanted, trained)

    def complete(
        self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False, start_text: str | None = None
    ) -> Iterator[Draft]:
        """Yields a Draft per denoising step, then a final closure-valid one. `start_text` is unused:
        `generate` starts from its own noise."""
        overrides = generate_overrides(self.settings.denoise, self.loaded.source)
        slots = self.canvas_slots(request)
        input_ids = self.prompt_ids(request)

        def work(emit) -> None:
            streamer = DraftStreamer(self.loaded.tokenizer, emit, cancelled)
            with canvas_of(self.loaded.model, slots):
                self.loaded.model.generate(input_ids, streamer=streamer, max_new_tokens=slots, **overrides)

        step, text = 0, ""
        for raw in stream_from_thread(work, "instruct-generate"):
            step, text = step + 1, self.settings.shape(answer_text(raw), request.prefix)
            yield Draft(text, step, 0.0, final=False)
        if cancelled():
            return
        if not syntax_check.check(request.prefix, text, request.suffix, request.language).valid:
            text = syntax_check.longest_valid_prefix(request.prefix, text, request.suffix, request.language)
        yield Draft(text, step, 0.0, final=True, valid=True)
