"""The engine thread (diffusion_infill.lsp.completion.worker): what it knows while a model loads, and how it
starts torch."""

from __future__ import annotations

import threading

import pytest
import torch

from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.loading import ModelLoadError
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.lsp.completion.current_engine import State, TorchStart
from diffusion_infill.lsp.completion.policy import RequestPolicy
from diffusion_infill.lsp.completion.worker import EngineWorker
from diffusion_infill.lsp.settings import ServerSettings


@pytest.fixture
def held_load(monkeypatch):
    """A load that waits until the test lets it go, then fails: the worker stays LOADING meanwhile."""
    release = threading.Event()

    def load_any(*args, **kwargs):
        release.wait(60)
        raise ModelLoadError("stopped by the test")

    monkeypatch.setattr("diffusion_infill.engine.factory.load_any", load_any)  # what the engine thread imports
    worker = EngineWorker()
    yield worker, release
    release.set()
    worker.shutdown()


def test_while_a_local_checkpoint_loads_its_calibration_already_gates(held_load, model_dir):
    """Document drafts and the gate need the calibration only, a file beside the weights: they
    answer during the seconds the weights take to load."""
    worker, release = held_load
    loading = worker.load(str(model_dir), "cpu", "auto", EngineSettings())

    assert worker.state is State.LOADING
    assert worker.calibration is not None and worker.calibration == Calibration.load(model_dir)
    policy = RequestPolicy.of(ServerSettings(), worker.calibration, worker.judges_lines)
    assert policy.gate.threshold == worker.calibration.threshold > 0
    release.set()
    assert loading.result(60).error == "stopped by the test"
    assert worker.calibration is None  # nothing loaded: nothing calibrated


def test_a_hub_id_has_no_calibration_while_it_loads(held_load):
    worker, _ = held_load
    worker.load("google/diffusiongemma-26B-A4B-it", "cpu", "auto", EngineSettings())

    assert worker.state is State.LOADING and worker.calibration is None


def test_a_home_that_cannot_be_found_is_left_to_the_load_to_report(held_load):
    worker, release = held_load
    release.set()
    outcome = worker.load("~no-such-user-here/model", "cpu", "auto", EngineSettings()).result(60)

    assert worker.state is State.FAILED and outcome.error


def test_a_quantization_the_device_cannot_run_is_the_load_error_the_editor_is_shown(model_dir):
    worker = EngineWorker()
    try:
        outcome = worker.load(str(model_dir), "cpu", "auto", EngineSettings(), quantize="int4").result(120)
        assert worker.state is State.FAILED and "int4 needs a CUDA GPU" in outcome.error
        assert worker.load(str(model_dir), "cpu", "auto", EngineSettings(), quantize="int8").result(120).error is None
    finally:
        worker.shutdown()


def test_torch_is_seeded_and_limited_on_the_engine_thread_before_the_first_load(model_dir):
    """serve's --seed and --threads, applied where the model stack is imported and the model runs."""
    before = torch.get_num_threads()
    worker = EngineWorker(torch_start=TorchStart(seed=1234, threads=2))
    try:
        assert worker.load(str(model_dir), "cpu", "auto", EngineSettings()).result(120).error is None
        started = worker.fix(lambda _: (torch.initial_seed(), torch.get_num_threads())).result(60)
        assert started == (1234, 2)
    finally:
        worker.shutdown()
        torch.set_num_threads(before)


def test_a_superseded_load_that_fails_leaves_the_next_one_loading(monkeypatch):
    """Completions asked while the second model loads wait for it: the first load's failure, which nobody
    waits for any more, does not turn the worker FAILED (the server answers nothing while it is)."""
    released = {"first": threading.Event(), "second": threading.Event()}

    def load_any(model, *args, **kwargs):
        released[model].wait(60)
        raise ModelLoadError(f"{model}: stopped by the test")

    monkeypatch.setattr("diffusion_infill.engine.factory.load_any", load_any)
    worker = EngineWorker()
    try:
        first = worker.load("first", "cpu", "auto", EngineSettings())
        worker.load("second", "cpu", "auto", EngineSettings())
        released["first"].set()
        assert first.result(60).error == "first: stopped by the test"
        assert worker.state is State.LOADING
    finally:
        released["second"].set()
        worker.shutdown()
