"""Server settings: the `diffusionInfill` section of initializationOptions and of
workspace/didChangeConfiguration, checked one by one; a bad value keeps its previous
setting and the user is told which and why. A workspace's settings are not trusted: each count,
size and time has a range (`RANGES`, docs/protocol.md), and a number outside it is clamped to it,
with a line saying so (invokedItems at 10^9 asked a billion samples of every invoked completion)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from diffusion_infill.engine.checkpoint import QUANTIZE
from diffusion_infill.engine.remote.settings import FORMATS, RemoteSettings
from diffusion_infill.engine.requests import MODES
from diffusion_infill.engine.settings import EngineSettings

SECTION = "diffusionInfill"
ENGINES = ("local", "openai")  # a checkpoint in this process, or an OpenAI-compatible server (engine.remote.client)


@dataclass(frozen=True)
class ServerSettings:
    model: str | None = None  # checkpoint directory or cached hub id; None: the embedded model
    device: str = "auto"  # "auto" (CUDA when available), "cpu", "cuda:1", ...
    dtype: str = "auto"  # "auto" (bfloat16 on CUDA, float32 on CPU), "float32", ...
    quantize: str = "none"  # "int8" (CPU or CUDA) or "int4" (CUDA) weights: engine.quantization
    max_gap_tokens: int | None = None  # slots in the gap; None: what the model was trained with
    max_steps: int | None = None  # denoising steps at most; None: the checkpoint's (24 on the clamped canvas)
    entropy_bound: float | None = None  # summed entropy accepted per step; None: the engine's default
    mode: str = "auto"  # "single-line", "multi-line", or "auto" (multi-line on an empty line)
    enabled_languages: tuple[str, ...] | None = None  # LSP languageIds to complete in; None: all
    invoked_items: int = 3  # completions offered for cycling on an explicitly invoked request
    engine: str = "local"  # "local" (the checkpoint in `model`) or "openai" (`model` served at `url`)
    url: str | None = None  # with engine "openai": the server's base URL, e.g. http://gpu-box:8000/v1
    prompt_format: str = "auto"  # with engine "openai": "auto" (probed), "diffusion", "chat" or "fim"
    timeout: float = 0.8  # with engine "openai": seconds an as-you-type completion may take
    invoked_timeout: float = 10.0  # with engine "openai": seconds for invoked completions and code actions
    # Automatic requests offer a completion only when its estimated chance of being accepted
    # (diffusion_infill.engine.completion.confidence) is at least this; invoked ones offer every completion. None: the
    # threshold fitted with the checkpoint (its confidence.json; diffusion_infill.bench.calibrate chooses the
    # one that saves most typing per wrong suggestion shown); without one, everything.
    min_confidence: float | None = None
    # Offer what followed the same tokens earlier in the file (diffusion_infill.engine.completion.repeated_text),
    # and lines copied from the code that the model judges (engine.completion.copied_lines, judge)
    document_drafts: bool = True
    # Automatic requests right after one of these characters run nothing (lsp.completion.triggers); "": none
    quiet_after: str | None = None  # None: the characters calibrated with the checkpoint

    def engine_settings(self) -> EngineSettings:
        # documentDrafts lets the engine copy lines; who answers from them: lsp.completion.policy
        return EngineSettings(mode=self.mode, document_drafts=self.document_drafts).with_overrides(
            max_gap_tokens=self.max_gap_tokens, max_steps=self.max_steps, entropy_bound=self.entropy_bound
        )

    def model_key(self) -> tuple:
        """What loading depends on: a change here means loading the model (or connecting) again."""
        return self.model, self.device, self.dtype, self.quantize, self.remote_settings()

    def remote_settings(self) -> RemoteSettings | None:
        """The server to ask, with engine "openai"; None: the in-process engine."""
        if self.engine != "openai":
            return None
        return RemoteSettings(
            self.url or "",
            self.model or "",
            self.prompt_format,
            timeout=self.timeout,
            invoked_timeout=self.invoked_timeout,
        )

    def enabled_for(self, language_id: str) -> bool:
        return self.enabled_languages is None or language_id in self.enabled_languages


# The range of each count, size and time a workspace may set (docs/protocol.md's settings table says
# the same): a number outside it is clamped to it.
RANGES: dict[str, tuple[float, float]] = {
    "max_gap_tokens": (1, 256),  # slots; a served DiffusionGemma's canvas is 256 (docs/remote.md)
    "max_steps": (1, 256),  # denoising passes: each reveals a slot at least, so more than the gap buys nothing
    "invoked_items": (1, 10),  # samples computed per invoked request
    "timeout": (0.01, 30.0),  # seconds; an as-you-type completion waited longer is no longer wanted
    "invoked_timeout": (0.01, 300.0),  # seconds
}
MAX_TEXT = 4096  # characters of a path, URL, device or model name
MAX_LANGUAGES = 1000  # entries of enabledLanguages (each request looks its languageId up in it)
MAX_QUIET = 100  # characters of quietAfter
_SHOWN = 80  # characters of a bad key or value a message shows
_PROBLEMS = 10  # lines a message lists; one more counts the rest


def _text(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("expected a non-empty string")
    if len(value) > MAX_TEXT:
        raise ValueError(f"expected at most {MAX_TEXT:,} characters")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("expected an integer")
    return value


def _optional_integer(value: Any) -> int | None:
    return None if value is None else _integer(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError("expected a number")
    return float(value)


def _positive_float(value: Any) -> float:
    if _number(value) <= 0:
        raise ValueError("expected a positive number")
    return float(value)


def _optional_probability(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError("expected a number from 0 to 1")
    return float(value)


def _optional_positive_float(value: Any) -> float | None:
    return None if value is None else _positive_float(value)


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _characters(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError('expected a string of characters ("" for none) or null')
    if value is not None and len(value) > MAX_QUIET:
        raise ValueError(f"expected at most {MAX_QUIET} characters")
    return value


def _one_of(choices: tuple[str, ...]) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return value

    return check


def _languages(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("expected a list of languageIds, or null for all")
    if len(value) > MAX_LANGUAGES:
        raise ValueError(f"expected at most {MAX_LANGUAGES:,} languageIds, got {len(value):,}")
    if any(len(item) > MAX_TEXT for item in value):
        raise ValueError(f"expected languageIds of at most {MAX_TEXT:,} characters")
    return tuple(value)


# settings key (camelCase, as editors write it) -> (field name, checker)
_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "model": ("model", _optional_text),
    "device": ("device", _text),
    "dtype": ("dtype", _text),
    "quantize": ("quantize", _one_of(QUANTIZE)),
    "maxGapTokens": ("max_gap_tokens", _optional_integer),
    "maxSteps": ("max_steps", _optional_integer),
    "entropyBound": ("entropy_bound", _optional_positive_float),
    "mode": ("mode", _one_of(MODES)),
    "enabledLanguages": ("enabled_languages", _languages),
    "invokedItems": ("invoked_items", _integer),
    "minConfidence": ("min_confidence", _optional_probability),
    "documentDrafts": ("document_drafts", _flag),
    "quietAfter": ("quiet_after", _characters),
    "engine": ("engine", _one_of(ENGINES)),
    "url": ("url", _optional_text),
    "promptFormat": ("prompt_format", _one_of(FORMATS)),
    "timeout": ("timeout", _number),
    "invokedTimeout": ("invoked_timeout", _number),
}
assert {name for name, _ in _KEYS.values()} == {f.name for f in fields(ServerSettings)}
assert set(RANGES) <= {f.name for f in fields(ServerSettings)}


def _clamped(key: str, name: str, value: Any) -> tuple[Any, str | None]:
    """`value` within its range, when `name` has one, and the line that says it was clamped."""
    if name not in RANGES or value is None:
        return value, None
    low, high = RANGES[name]
    bound = low if value < low else high if value > high else None
    if bound is None:
        return value, None
    bound = type(value)(bound)
    side = "less" if bound == low else "more"
    return bound, f"{SECTION}.{key}: {value!r} is {side} than it may be ({low:g} to {high:g}); using {bound!r}"


def _cut(text: str) -> str:
    """A rejected value or key as a message shows it: a long one cut (a 10 MB string is no message)."""
    return text if len(text) <= _SHOWN else f"{text[:_SHOWN]}... ({len(text):,} characters)"


def section_of(payload: Any) -> Any:
    """The `diffusionInfill` value of an options or settings payload; None when it has none."""
    return payload.get(SECTION) if isinstance(payload, Mapping) else None


def initialization_section(options: Any) -> Any:
    """initializationOptions: the section under `diffusionInfill`, or its keys written directly."""
    if isinstance(options, Mapping) and SECTION not in options:
        return options
    return section_of(options)


def merge(current: ServerSettings, section: Any) -> tuple[ServerSettings, list[str]]:
    """`current` with the values of `section` applied, and a line per value that was ignored.
    No section, null or `[]` (how Lua clients such as Neovim's encode an empty table) change nothing."""
    if section is None or section == []:
        return current, []
    if not isinstance(section, Mapping):
        return current, [f"{SECTION}: expected an object of settings, got {section!r}"]
    values, problems = {}, []
    for key, value in section.items():
        if key not in _KEYS:
            problems.append(f"{SECTION}.{_cut(str(key))}: unknown setting (known: {', '.join(_KEYS)})")
            continue
        name, check = _KEYS[key]
        try:
            values[name], clamped = _clamped(key, name, check(value))
        except ValueError as error:
            problems.append(f"{SECTION}.{key}: {error}, got {_cut(repr(value))}; keeping {getattr(current, name)!r}")
            continue
        if clamped is not None:
            problems.append(clamped)
    if len(problems) > _PROBLEMS:
        problems[_PROBLEMS:] = [f"{len(problems) - _PROBLEMS:,} more"]
    return replace(current, **values), problems
