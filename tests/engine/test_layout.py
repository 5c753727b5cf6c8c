"""engine/ is arranged by job: the completion engine stands on its own; repair, the remote
engine and the autoregressive baseline build on it; training builds on all of them; nothing
in engine/ reaches into the benchmark."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.test_lsp_imports import imported_modules

ENGINE = Path(__file__).resolve().parents[2] / "engine"
NEVER = {
    "completion": {"engine.repair", "engine.remote", "engine.baseline", "engine.training", "bench"},
    "repair": {"engine.remote", "engine.baseline", "engine.training", "bench"},
    "remote": {"engine.baseline", "engine.training", "bench"},
    "baseline": {"engine.repair", "engine.remote", "engine.training", "bench"},
    "training": {"engine.remote", "bench"},
}


@pytest.mark.parametrize("package", sorted(NEVER))
def test_each_job_imports_only_what_it_builds_on(package):
    offenders = {
        f"{path.relative_to(ENGINE)} imports {name}"
        for path in (ENGINE / package).rglob("*.py")
        for name in imported_modules(path)
        if any(name == banned or name.startswith(banned + ".") for banned in NEVER[package])
    }
    assert not offenders
