"""Faults: checkpoints that cannot load or do not fit together, and an exception or
out-of-memory error inside a denoising step. Each gives a clear error, nothing hangs,
and the next request works.

Injected failures run in-process (lsp.completion.worker's engine thread, engine.completion.infill's prefix
cache); checkpoints broken on disk run through the real server process.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from raw_server import HANG_S, RawServer, frame, start_server

from diffusion_infill.engine.completion import infill
from diffusion_infill.engine.completion.prefix import encode_context
from diffusion_infill.engine.completion.prefix_cache import PrefixCache
from diffusion_infill.engine.loading import EMBEDDED_MODEL
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.lsp.completion.sampling import CompletionFailed, Job
from diffusion_infill.lsp.completion.worker import EngineWorker

REQUEST = InfillRequest("def area(width, height):\n    return ", "\n", "python")
REQUEST_FAILED = -32803
FAILURES = {
    "exception": lambda: RuntimeError("injected failure in a denoising step"),
    "out of memory": lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (injected)"),
}


# In-process: the engine thread


@pytest.fixture
def worker(tiny_model_dir):
    worker = EngineWorker()
    outcome = worker.load(str(tiny_model_dir), "cpu", "float32", EngineSettings().with_overrides(max_steps=3))
    assert outcome.result(HANG_S).error is None
    yield worker
    worker.shutdown()


def fail_at_step(monkeypatch, step: int, failure: Callable[[], BaseException]) -> list[int]:
    """engine.completion.infill's denoising loop raises `failure()` at `step` of its first run; returns the
    list of runs started, so a test can tell a retry from none."""
    real, runs = infill.denoise, []

    def denoise(*args, **kwargs):
        runs.append(len(runs))
        for done, item in enumerate(real(*args, **kwargs), start=1):
            if len(runs) == 1 and done == step:
                raise failure()
            yield item

    monkeypatch.setattr(infill, "denoise", denoise)
    return runs


def job(drafts: list | None = None) -> Job:
    return Job(REQUEST, samples=1, on_draft=(drafts.append if drafts is not None else lambda draft: None))


@pytest.mark.parametrize("failure", FAILURES)
def test_a_failing_denoising_step_fails_that_request_clearly_and_the_next_one_works(
    worker, monkeypatch, caplog, failure
):
    runs = fail_at_step(monkeypatch, step=2, failure=FAILURES[failure])
    drafts = []
    with caplog.at_level(logging.ERROR, logger="diffusion_infill.lsp.completion.sampling"):
        with pytest.raises(CompletionFailed, match="injected") as error:
            worker.complete(job(drafts)).result(HANG_S)
    assert type(FAILURES[failure]()).__name__ in str(error.value)  # the client is told what failed
    assert len(runs) == 1, "the failed completion was retried"
    assert len(drafts) == 1, "the draft before the failing step was streamed, nothing after it"
    [record] = [r for r in caplog.records if r.name == "diffusion_infill.lsp.completion.sampling"]
    assert record.levelno == logging.ERROR and record.exc_info is not None  # logged with its traceback
    [final] = worker.complete(job()).result(HANG_S)
    assert final.final and final.valid


def test_a_failure_while_loading_reports_it_and_later_requests_are_answered_empty(tiny_model_dir, monkeypatch):
    def out_of_memory(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory (injected while loading)")

    monkeypatch.setattr("diffusion_infill.engine.factory.load_any", out_of_memory)  # what the engine thread imports
    worker = EngineWorker()
    try:
        outcome = worker.load(str(tiny_model_dir), "cpu", "float32", EngineSettings()).result(HANG_S)
        assert "OutOfMemoryError" in outcome.error and "cpu" in outcome.error
        assert worker.complete(job()).result(HANG_S) is None  # no model: nothing to run, no exception
    finally:
        worker.shutdown()


def test_prefix_cache_recovers_from_an_encoder_that_fails_midway(tiny_loaded, monkeypatch):
    """The encoder extends the KV cache layer by layer; a failure after some layers (out of
    memory) leaves it longer than the prefix it claims. The next call must not reuse it."""
    tokenizer, ids = tiny_loaded.tokenizer, tiny_loaded.ids
    first = encode_context(tokenizer, ids.bos, "import os\n", "", 64, 4).prefix_ids
    longer = encode_context(tokenizer, ids.bos, "import os\nimport sys\n", "", 64, 4).prefix_ids
    encoder = tiny_loaded.model.model.encoder
    cache = PrefixCache()
    cache.encode(tiny_loaded.model, first)
    real_forward = encoder.forward

    def fails_after_extending(*args, **kwargs):
        real_forward(*args, **kwargs)
        raise torch.OutOfMemoryError("injected after the cache was extended")

    monkeypatch.setattr(encoder, "forward", fails_after_extending)
    with pytest.raises(torch.OutOfMemoryError):
        cache.encode(tiny_loaded.model, longer)
    monkeypatch.setattr(encoder, "forward", real_forward)
    recovered = cache.encode(tiny_loaded.model, longer)
    fresh = PrefixCache().encode(tiny_loaded.model, longer)
    assert recovered.get_seq_length() == fresh.get_seq_length() == len(longer)
    for layer, expected in zip(recovered.layers, fresh.layers, strict=True):
        torch.testing.assert_close(layer.keys, expected.keys)


# Through the server: checkpoints broken on disk


def broken_checkpoints(good: Path, root: Path) -> dict[str, tuple[Path, str]]:
    """Copies of a good checkpoint, each broken one way, with what its error must say."""

    def copy(name: str) -> Path:
        return Path(shutil.copytree(good, root / name))

    corrupt_config = copy("corrupt-config")
    (corrupt_config / "config.json").write_text("{ not json")
    truncated = copy("truncated-weights")
    weights = (truncated / "model.safetensors").read_bytes()
    (truncated / "model.safetensors").write_bytes(weights[: len(weights) // 2])
    no_weights = copy("no-weights")
    (no_weights / "model.safetensors").unlink()
    corrupt_tokenizer = copy("corrupt-tokenizer")
    (corrupt_tokenizer / "tokenizer.json").write_bytes(b"\x00\xff garbage")
    other_tokenizer = copy("other-tokenizer")  # the embedded model's 4,096-token tokenizer on a 512-token model
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(EMBEDDED_MODEL / name, other_tokenizer / name)
    return {
        "missing directory": (root / "does-not-exist", "no such directory"),
        "corrupt config.json": (corrupt_config, "corrupt-config"),
        "truncated weights": (truncated, "truncated-weights"),
        "no weights": (no_weights, "no-weights"),
        "corrupt tokenizer": (corrupt_tokenizer, "corrupt-tokenizer"),
        "tokenizer of another model": (other_tokenizer, "do not belong together"),
    }


def nan_checkpoint(good: Path, root: Path) -> Path:
    """Loads fine, but every weight is NaN: sampling raises inside the first denoising step."""
    from safetensors.torch import load_file, save_file

    directory = Path(shutil.copytree(good, root / "nan-weights"))
    weights = load_file(directory / "model.safetensors")
    save_file(
        {
            name: torch.full_like(tensor, float("nan")) if tensor.is_floating_point() else tensor
            for name, tensor in weights.items()
        },
        directory / "model.safetensors",
        metadata={"format": "pt"},
    )
    return directory


URI = "file:///reliability/faults.py"


class Session:
    """One server whose model is switched with workspace/didChangeConfiguration."""

    def __init__(self, server: RawServer):
        self.server, self.version = server, 1
        server.notify(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": URI,
                    "languageId": "python",
                    "version": 1,
                    "text": REQUEST.prefix + REQUEST.suffix,
                }
            },
        )

    def switch(self, model: Path) -> None:
        """Loads `model` (requests after this wait for the load)."""
        self.server.notify(
            "workspace/didChangeConfiguration", {"settings": {"diffusionInfill": {"model": str(model), "maxSteps": 2}}}
        )

    def shown_error(self, start: int) -> str:
        """The error the user was shown, from message `start` on."""
        shown = self.server.wait_for(lambda m: m.get("method") == "window/showMessage", start)["params"]
        assert shown["type"] == 1, shown  # 1: Error
        return shown["message"]

    def complete(self) -> dict:
        self.version += 1  # a new version each time: never the previous result again
        self.server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": URI, "version": self.version},
                "contentChanges": [{"text": REQUEST.prefix + REQUEST.suffix}],
            },
        )
        return self.server.response(
            self.server.request(
                "textDocument/inlineCompletion",
                {"textDocument": {"uri": URI}, "position": {"line": 1, "character": 11}, "context": {"triggerKind": 2}},
            )
        )


@pytest.fixture(scope="module")
def session(tiny_model_dir, tmp_path_factory):
    server = start_server(tiny_model_dir, tmp_path_factory.mktemp("faults"))
    session = Session(server)
    assert "result" in session.complete()
    yield session
    assert server.stop() == 0


def test_checkpoints_that_cannot_load_are_reported_and_the_next_model_works(session, tiny_model_dir, tmp_path):
    for name, (directory, says) in broken_checkpoints(tiny_model_dir, tmp_path).items():
        start = len(session.server.messages)
        session.switch(directory)
        assert session.complete()["result"] == [], name  # no model: no items, no error
        message = session.shown_error(start)
        assert "could not load the model" in message and says in message, f"{name}: {message}"
    session.switch(tiny_model_dir)
    assert "result" in session.complete()


def test_a_denoising_step_that_raises_fails_the_request_clearly_without_retry(session, tiny_model_dir, tmp_path):
    session.switch(nan_checkpoint(tiny_model_dir, tmp_path))  # it loads; sampling fails
    log_before = len(session.server.log)
    for _ in range(2):  # the same clear error every time, and no hang
        answer = session.complete()
        assert answer["error"]["code"] == REQUEST_FAILED
        assert "completion failed: RuntimeError: probability tensor contains" in answer["error"]["message"]
    failed = "diffusion_infill.lsp.completion.sampling ERROR completion failed"
    log = session.server.wait_for_log(failed, 2, start=log_before)
    assert log.count(failed) == 2, "logged once per failed request: no retry"
    assert "Traceback" in log
    session.switch(tiny_model_dir)
    assert "result" in session.complete()


# The session ending


@pytest.mark.parametrize("ending", ["exit after shutdown", "stdin closed", "stdin closed mid-frame"])
def test_the_server_exits_when_the_session_ends(tiny_model_dir, tmp_path, ending):
    server = start_server(tiny_model_dir, tmp_path)
    try:
        if ending == "exit after shutdown":
            server.call("shutdown", None)
            after = server.response(
                server.request(
                    "textDocument/inlineCompletion",
                    {
                        "textDocument": {"uri": URI},
                        "position": {"line": 0, "character": 0},
                        "context": {"triggerKind": 2},
                    },
                )
            )
            assert after["error"]["code"] == -32600  # InvalidRequest: nothing runs after shutdown
            server.notify("exit", None)
        elif ending == "stdin closed mid-frame":
            server.write(frame(b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}')[:30])
        server.process.stdin.close()
        assert server.process.wait(HANG_S) == 0  # raises TimeoutExpired if it hangs instead
    finally:
        server.kill()
