"""Shared fixtures: a random-initialised tiny DiffusionGemma and its tokenizer (no download),
and a copy of the embedded model for the end-to-end tests.

The mechanics tests need a model with the real architecture and special tokens, not a
trained one: random weights produce junk, and the engine must still honour its contracts.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import pytest
import torch

from diffusion_infill.engine.baseline.autoregressive import FIM_TOKENS, FimIds, FimModel, FimSpec
from diffusion_infill.engine.completion.canvas import CanvasSpec
from diffusion_infill.engine.loading import EMBEDDED_MODEL, LoadedModel, ModelLoadError, load
from diffusion_infill.engine.tiny import TinyArchitecture, config_token_ids, tiny_config, tiny_model
from diffusion_infill.engine.tokens import SpecialIds
from diffusion_infill.engine.training.corpus import Document, stdlib_files
from diffusion_infill.engine.training.fim import fim_model
from diffusion_infill.engine.training.tokenizer import train_tokenizer

TOKENIZER_DOCUMENTS = 20
VOCAB_SIZE = 512
CANVAS_LENGTH = 32
TINY_SPEC = CanvasSpec(noise="mask", gap_slots=12, suffix_head=4, max_prefix=64)

pytest_plugins = ["require_all"]  # DIFFUSION_INFILL_REQUIRE_ALL=1: a skip is a failure (CI)

# The test model is tiny: a second intra-op thread buys nothing, and on a machine whose
# cores are busy (a training job) thread hand-offs make every matmul ~100x slower.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seeded_torch():
    """Every test starts from the same global torch RNG state (samplers draw from it)."""
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def tiny_documents() -> list[Document]:
    """A few stdlib files, the same on every run (stdlib_files is sorted)."""
    return list(islice(stdlib_files(held_out=False), TOKENIZER_DOCUMENTS))


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_documents):
    return train_tokenizer(tiny_documents, VOCAB_SIZE, seed=0)


@pytest.fixture(scope="session")
def tiny_loaded(tiny_tokenizer) -> LoadedModel:
    architecture = TinyArchitecture(
        vocab_size=len(tiny_tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        moe_intermediate_size=16,
    )
    config = tiny_config(architecture, config_token_ids(tiny_tokenizer), canvas_length=CANVAS_LENGTH)
    torch.manual_seed(0)
    model = tiny_model(config)
    model.eval()
    return LoadedModel(model, tiny_tokenizer, TINY_SPEC, SpecialIds.from_tokenizer(tiny_tokenizer), "tiny-random")


@pytest.fixture(scope="session")
def ids(tiny_loaded) -> SpecialIds:
    return tiny_loaded.ids


@pytest.fixture(scope="session")
def tiny_fim(tiny_documents) -> FimModel:
    """A random-initialised autoregressive baseline with the tiny tokenizer plus the FIM tokens."""
    tokenizer = train_tokenizer(tiny_documents, VOCAB_SIZE, seed=0)
    tokenizer.add_special_tokens({"additional_special_tokens": list(FIM_TOKENS)})
    fim_ids = FimIds.from_tokenizer(tokenizer)
    architecture = TinyArchitecture(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1
    )
    torch.manual_seed(0)
    model = fim_model(architecture, len(tokenizer), fim_ids).eval()
    spec = FimSpec(max_prefix=TINY_SPEC.max_prefix, suffix_head=TINY_SPEC.suffix_head, max_middle=TINY_SPEC.gap_slots)
    return FimModel(model, tokenizer, spec, fim_ids, "tiny-fim-random")


COPY_ATTEMPTS = 3
MODEL_VARIABLE = "DIFFUSION_INFILL_TEST_MODEL"  # another checkpoint directory to run the end-to-end tests on


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """The embedded model, copied once: training rewrites src/diffusion_infill/engine/model while tests run."""
    if os.environ.get(MODEL_VARIABLE):
        return Path(os.environ[MODEL_VARIABLE])
    if not (EMBEDDED_MODEL / "config.json").exists():
        pytest.skip("no embedded model in src/diffusion_infill/engine/model yet")
    for attempt in range(COPY_ATTEMPTS):
        target = tmp_path_factory.mktemp("model") / "model"
        shutil.copytree(EMBEDDED_MODEL, target)
        try:
            load(str(target))  # a copy taken mid-rewrite does not load; take another
            return target
        except ModelLoadError:
            if attempt == COPY_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_loaded, tmp_path_factory) -> Path:
    """The random-weight tiny model saved as a checkpoint directory: many completions quickly, and no
    revision.json, so the server checks document drafts itself (tests/lsp, tests/reliability)."""
    directory = tmp_path_factory.mktemp("tiny-model")
    tiny_loaded.model.save_pretrained(directory)
    tiny_loaded.tokenizer.save_pretrained(directory)
    tiny_loaded.spec.save(directory)
    return directory


@pytest.fixture(scope="session")
def console_script() -> str:
    """The installed `diffusion-infill` script beside this interpreter: CI runs
    .venv/bin/python without activating the venv, so it is not on PATH there."""
    command = shutil.which("diffusion-infill", path=str(Path(sys.executable).parent))
    assert command, "the console script is installed with the project"
    return command


@dataclass(frozen=True)
class OpenAIServer:
    url: str  # base URL, ending in /v1
    fim_model: str  # the autoregressive baseline: plain completions only (its tokenizer has no chat template)
    chat_model: str  # the same weights with a chat template: chat completions too


@pytest.fixture(scope="session")
def openai_server(tmp_path_factory):
    """`transformers serve` serving the autoregressive baseline (src/diffusion_infill/bench/fim_model), plain and with a
    chat template: a real OpenAI-compatible server for diffusion_infill.engine.remote.client, one per test session."""
    from openai_servers import TransformersServe, with_chat_template

    from diffusion_infill.bench.compare import BASELINE_MODEL

    chat = with_chat_template(BASELINE_MODEL, tmp_path_factory.mktemp("served") / "fim_chat")
    server = TransformersServe([BASELINE_MODEL, chat])
    server.start()
    yield OpenAIServer(server.url, str(BASELINE_MODEL), str(chat))
    server.stop()
