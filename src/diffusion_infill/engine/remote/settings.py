"""What the remote engine (diffusion_infill.engine.remote.client) needs to know about its server: plain data, so the
command line can describe its options without importing torch or the HTTP client."""

from __future__ import annotations

from dataclasses import dataclass

from diffusion_infill.engine.tokens import FIM_TOKENS

FORMATS = ("auto", "diffusion", "chat", "fim")


@dataclass(frozen=True)
class RemoteSettings:
    url: str  # the server's OpenAI base URL, e.g. http://gpu-box:8000/v1
    model: str  # the served model's name (vLLM: --served-model-name, else the hub id or path)
    prompt_format: str = "auto"  # "auto" (probed), "diffusion", "chat" or "fim"
    fim_tokens: tuple[str, str, str] = FIM_TOKENS  # prefix, suffix and middle markers of the "fim" prompt
    fim_stop: tuple[str, ...] = ("<end>", "<eos>")  # where a "fim" middle ends (the baseline's END)
    timeout: float = 0.8  # seconds for an as-you-type completion; later it answers nothing
    invoked_timeout: float = 10.0  # seconds for an invoked completion, the CLI and code actions
    max_tokens: int = 32  # insertion tokens at most: the gap's seed slots with "diffusion"
    suffix_head_chars: int = 32  # text after the cursor pinned behind the gap ("diffusion")
    noise_vocab: int = 262_144  # seed slots are drawn from ids below this: DiffusionGemma's text vocabulary
    max_diffusion_steps: int | None = None  # vLLM's diffusion_max_steps; None: the server's default
