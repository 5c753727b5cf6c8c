"""Fixtures of the reliability tests: a small random-weight checkpoint on disk, so the
server process runs many completions quickly."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_loaded, tmp_path_factory) -> Path:
    """The random-weight tiny model of tests/conftest.py saved as a checkpoint directory."""
    directory = tmp_path_factory.mktemp("tiny-model")
    tiny_loaded.model.save_pretrained(directory)
    tiny_loaded.tokenizer.save_pretrained(directory)
    tiny_loaded.spec.save(directory)
    return directory
