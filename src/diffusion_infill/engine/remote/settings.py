"""What the remote engine (diffusion_infill.engine.remote.client) needs to know about its server: plain data, so the
command line can describe its options without importing torch or the HTTP client."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from diffusion_infill.engine.tokens import FIM_TOKENS

FORMATS = ("auto", "diffusion", "chat", "fim")
API_KEY_VARIABLES = ("DIFFUSION_INFILL_API_KEY", "OPENAI_API_KEY")  # the first one set is sent
# The URL the key is for when the command line names none: how an editor passes the URL of the
# user's own settings to the server it starts.
API_URL_VARIABLE = "DIFFUSION_INFILL_API_URL"


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
    api_key: str | None = field(default=None, repr=False)  # sent as a bearer token; None: no Authorization header


def api_key() -> str | None:
    """The key from the environment, never from settings a workspace can set; vLLM started without
    --api-key ignores whatever is sent."""
    return next((os.environ[name] for name in API_KEY_VARIABLES if os.environ.get(name)), None)


def _same_url(first: str, second: str) -> bool:
    return first.rstrip("/") == second.rstrip("/")


@dataclass(frozen=True)
class Credentials:
    """The API key and the one URL it was configured for: the command line's --url, else
    $DIFFUSION_INFILL_API_URL. A URL that reaches the server another way (a client's
    initializationOptions or workspace settings, or any process on --tcp) gets no key."""

    url: str | None
    key: str | None = field(default=None, repr=False)

    @classmethod
    def from_environment(cls, url: str | None) -> Credentials:
        return cls(url or os.environ.get(API_URL_VARIABLE) or None, api_key())

    def sends_key(self, url: str) -> bool:
        return self.key is not None and self.url is not None and _same_url(url, self.url)

    def attach(self, remote: RemoteSettings) -> RemoteSettings:
        """`remote` with the key when it goes to the key's URL, else without any."""
        return replace(remote, api_key=self.key if self.sends_key(remote.url) else None)
