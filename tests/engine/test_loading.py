"""Specification of loading a checkpoint (diffusion_infill.engine.loading)."""

import ast
import re
from pathlib import Path

import pytest
import torch

from diffusion_infill.engine.completion.canvas import CanvasSpec
from diffusion_infill.engine.loading import LoadedModel, ModelLoadError, load, pick_device, pick_dtype


@pytest.fixture
def saved(tiny_loaded, tmp_path):
    """The tiny model saved as an infill checkpoint: weights, tokenizer and canvas spec."""
    tiny_loaded.model.save_pretrained(tmp_path)
    tiny_loaded.tokenizer.save_pretrained(tmp_path)
    tiny_loaded.spec.save(tmp_path)
    return tmp_path


# Failures name what was tried


def test_missing_directory_raises_model_load_error_naming_it(tmp_path):
    missing = tmp_path / "nonexistent" / "dir"

    with pytest.raises(ModelLoadError, match=re.escape(str(missing))):
        load(str(missing))


def test_missing_directory_says_it_does_not_exist(tmp_path):
    with pytest.raises(ModelLoadError, match="no such directory"):
        load(str(tmp_path / "nonexistent"))


def test_corrupt_config_raises_model_load_error_naming_the_directory(saved):
    (saved / "config.json").write_text("{ this is not json")

    with pytest.raises(ModelLoadError, match=re.escape(str(saved))):
        load(str(saved), device="cpu")


def test_directory_with_a_tokenizer_but_no_config_raises_model_load_error_naming_it(saved):
    # e.g. a training run directory: the tokenizer is there, the exported model is not
    (saved / "config.json").unlink()

    with pytest.raises(ModelLoadError, match=re.escape(str(saved))):
        load(str(saved), device="cpu")


def test_empty_directory_raises_model_load_error_naming_it(tmp_path):
    with pytest.raises(ModelLoadError, match=re.escape(str(tmp_path))):
        load(str(tmp_path), device="cpu")


def test_load_error_says_nothing_was_downloaded(tmp_path):
    with pytest.raises(ModelLoadError, match="offline"):
        load(str(tmp_path / "nonexistent"))


# Round trip


def test_saved_checkpoint_loads_with_its_canvas_spec(saved, tiny_loaded):
    loaded = load(str(saved), device="cpu")

    assert isinstance(loaded, LoadedModel)
    assert loaded.spec == tiny_loaded.spec
    assert loaded.source == str(saved)


def test_saved_checkpoint_loads_with_its_special_ids(saved, tiny_loaded):
    assert load(str(saved), device="cpu").ids == tiny_loaded.ids


def test_saved_checkpoint_loads_the_same_weights(saved, tiny_loaded):
    loaded = load(str(saved), device="cpu")

    original, restored = tiny_loaded.model.state_dict(), loaded.model.state_dict()

    assert restored.keys() == original.keys()
    for name, tensor in original.items():
        torch.testing.assert_close(restored[name], tensor, msg=name)


def test_saved_checkpoint_loads_the_same_tokenizer(saved, tiny_loaded):
    text = "def area(width, height):\n    return width * height\n"

    assert load(str(saved), device="cpu").tokenizer.encode(text) == tiny_loaded.tokenizer.encode(text)


def test_loaded_model_is_in_eval_mode_on_the_requested_device(saved):
    loaded = load(str(saved), device="cpu")

    assert not loaded.model.training
    assert loaded.device == torch.device("cpu")


def test_checkpoint_without_canvas_spec_loads_for_the_instruction_path(saved):
    (saved / "infill.json").unlink()

    loaded = load(str(saved), device="cpu")

    assert loaded.spec is None
    assert loaded.ids is None


def test_spec_file_is_written_beside_the_weights(saved, tiny_loaded):
    assert CanvasSpec.load(saved) == tiny_loaded.spec
    assert (saved / "config.json").is_file()


# Device and dtype


def test_explicit_device_is_used():
    assert pick_device("cpu") == torch.device("cpu")


def test_auto_device_is_cuda_only_when_available():
    assert pick_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_auto_dtype_is_float32_on_cpu():
    assert pick_dtype(None, torch.device("cpu")) == torch.float32


def test_auto_dtype_is_bfloat16_on_cuda():
    assert pick_dtype("auto", torch.device("cuda")) == torch.bfloat16


def test_explicit_dtype_is_used():
    assert pick_dtype("float16", torch.device("cpu")) == torch.float16


def test_a_cuda_device_torch_cannot_see_is_a_model_load_error():
    device = f"cuda:{torch.cuda.device_count()}"  # one past the last GPU: none on a CPU-only build
    with pytest.raises(ModelLoadError, match=re.escape(device)):
        pick_device(device)


def test_an_unknown_device_is_a_model_load_error():
    with pytest.raises(ModelLoadError, match="unknown device 'gpu'"):
        pick_device("gpu")


def test_an_unknown_dtype_is_a_model_load_error():
    with pytest.raises(ModelLoadError, match="unknown dtype 'float99'"):
        pick_dtype("float99", torch.device("cpu"))


def test_a_hub_id_missing_from_the_cache_names_the_cache_and_the_download_command(tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelLoadError) as raised:
        load("example-org/not-downloaded")
    message = str(raised.value)
    assert "not in the local hub cache" in message and str(tmp_path) in message
    assert "hf download example-org/not-downloaded" in message and "\n" not in message


# No code from the Hub: transformers 5 "kernelizes" a model by default (use_kernels=None means
# on), with layers fetched from the Hub on a GPU; a language server must never run those.

ROOT = Path(__file__).resolve().parents[2]


def test_a_loaded_checkpoint_runs_no_hub_kernels(saved):
    assert load(str(saved), device="cpu").model.use_kernels is False


def test_the_loaded_baseline_runs_no_hub_kernels():
    from diffusion_infill.engine.baseline.autoregressive import load_fim

    assert load_fim(ROOT / "src" / "diffusion_infill" / "bench" / "fim_model", "cpu").model.use_kernels is False


def _model_loads_without_use_kernels_false(path: Path) -> list[str]:
    """`X.from_pretrained(...)` calls of a model class (not a tokenizer) that do not pass use_kernels=False."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "from_pretrained"
            and "Tokenizer" not in ast.unparse(node.func.value)
        ):
            continue
        off = any(
            k.arg == "use_kernels" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in node.keywords
        )
        if not off:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_model_load_in_the_project_turns_hub_kernels_off():
    sources = [
        path
        for folder in ("src", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if not {"samples", "node_modules"} & set(path.parts)
    ]  # samples: a half-typed file to complete
    assert [hit for path in sources for hit in _model_loads_without_use_kernels_false(path)] == []


# Quiet: the server's stderr is the editor's log (Neovim files every line of it as an error), so loading
# draws no "Loading weights" progress bar there, whichever model it is.


@pytest.fixture
def progress_bars_on():
    """transformers' progress bars on, as in a fresh process; the setting is restored after."""
    from transformers.utils import logging as transformers_logging

    was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()
    yield
    (transformers_logging.enable_progress_bar if was_on else transformers_logging.disable_progress_bar)()


def test_loading_a_checkpoint_writes_nothing_to_stderr(saved, progress_bars_on, capfd):
    load(str(saved), device="cpu")

    assert "Loading weights" not in capfd.readouterr().err


def test_loading_the_baseline_writes_nothing_to_stderr(progress_bars_on, capfd):
    from diffusion_infill.engine.baseline.autoregressive import load_fim

    load_fim(ROOT / "src" / "diffusion_infill" / "bench" / "fim_model", "cpu")

    assert "Loading weights" not in capfd.readouterr().err
