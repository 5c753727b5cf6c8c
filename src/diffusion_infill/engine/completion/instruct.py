"""Completions from an instruction-tuned checkpoint not trained on the clamped canvas
(e.g. google/diffusiongemma-26B-A4B-it): the prefix and suffix go into a chat prompt that
asks for only the missing code, and the model's own `generate` answers on a plain canvas
while a draft streamer reports every denoising step."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import torch
from transformers.generation.streamers import BaseStreamer
from transformers.models.diffusion_gemma.generation_diffusion_gemma import EntropyBoundSamplerConfig

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion.chat_prompt import answer_text, instruction
from diffusion_infill.engine.loading import LoadedModel
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.engine.streaming import Cancelled, stream_from_thread


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

    def complete(
        self, request: InfillRequest, cancelled: Callable[[], bool] = lambda: False, start_text: str | None = None
    ) -> Iterator[Draft]:
        """Yields a Draft per denoising step, then a final closure-valid one. `start_text` is unused:
        `generate` starts from its own noise."""
        denoise = self.settings.denoise.for_checkpoint(self.loaded.source).resolved()
        max_new = self.settings.max_gap_tokens or self.loaded.model.config.canvas_length
        input_ids = self.prompt_ids(request)

        def work(emit) -> None:
            streamer = DraftStreamer(self.loaded.tokenizer, emit, cancelled)
            self.loaded.model.generate(
                input_ids,
                streamer=streamer,
                max_new_tokens=max_new,
                max_denoising_steps=denoise.max_steps,
                t_min=denoise.t_min,
                t_max=denoise.t_max,
                sampler_config=EntropyBoundSamplerConfig(entropy_bound=float(denoise.entropy_bound)),
            )

        step, text = 0, ""
        for raw in stream_from_thread(work, "instruct-generate"):
            step, text = step + 1, self.settings.shape(answer_text(raw), request.prefix)
            yield Draft(text, step, 0.0, final=False)
        if cancelled():
            return
        if not syntax_check.check(request.prefix, text, request.suffix, request.language).valid:
            text = syntax_check.longest_valid_prefix(request.prefix, text, request.suffix, request.language)
        yield Draft(text, step, 0.0, final=True, valid=True)
