"""src/diffusion_infill/engine/ is arranged by job: the completion engine stands on its own; repair, the
remote engine and the autoregressive baseline build on it; training builds on all of them; nothing
in engine/ reaches into the benchmark. And one place per rule: which tokens are never written,
whether a context is typed along, which requests are answered without a run, and which closers
the editor typed by itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lsp.test_lsp_imports import imported_modules

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "diffusion_infill"
ENGINE = PACKAGE / "engine"


def named(*modules: str) -> set[str]:
    """Full names of modules given relative to the package: "engine.tokens" is diffusion_infill.engine.tokens."""
    return {f"diffusion_infill.{module}" for module in modules}


NEVER = {
    "completion": named("engine.repair", "engine.remote", "engine.baseline", "engine.training", "bench"),
    "repair": named("engine.remote", "engine.baseline", "engine.training", "bench"),
    "remote": named("engine.baseline", "engine.training", "bench"),
    "baseline": named("engine.repair", "engine.remote", "engine.training", "bench"),
    "training": named("engine.remote", "bench"),
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


def _modules():
    for path in PACKAGE.rglob("*.py"):
        if not (path.parent / "__init__.py").exists():
            continue  # not code of the package: cli/samples holds broken files on purpose
        yield ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts), path


def importers(module: str) -> set[str]:
    """The modules of the code (not the tests) that import `module` or a name from it."""
    return {
        name
        for name, path in _modules()
        if any(imported == module or imported.startswith(module + ".") for imported in imported_modules(path))
    }


def test_the_tokens_never_written_are_listed_in_engine_tokens_only():
    readers = {
        name
        for name, path in _modules()
        if any(
            attribute in path.read_text(encoding="utf-8")
            for attribute in ("added_tokens_decoder", "all_special_ids", "all_special_tokens")
        )
    }
    assert readers == named("engine.tokens")
    assert named("engine.repair.diffusion", "engine.remote.client") <= importers("diffusion_infill.engine.tokens")


def test_answers_without_a_run_are_decided_in_one_module():
    # bench.calibrate counts how often document drafts are right: the numbers their estimate is made of;
    # engine.completion.copied_lines hands the document draft to the model as one candidate to judge
    without_run = named("lsp.completion.without_run")
    assert importers("diffusion_infill.engine.completion.repeated_text") == without_run | named(
        "bench.calibrate", "engine.completion.copied_lines"
    )
    # the quiet characters' rule is asked by the policy alone (the Trigger type beside it is everyone's)
    askers = {name for name, path in _modules() if "triggers.quiet(" in path.read_text(encoding="utf-8")}
    assert askers == without_run
    # the server's runs ask it, and the benchmark's typed-along scenario warm-starts as its cache does (rest)
    assert importers("diffusion_infill.lsp.completion.without_run") == named("lsp.completion.runs", "bench.compare")


def test_the_closers_an_editor_types_by_itself_are_listed_in_one_module():
    # the server's items cover them, a document draft or a copied line leaves them out: the same characters for all
    listers = {name for name, path in _modules() if "AUTO_PAIR_CLOSERS =" in path.read_text(encoding="utf-8")}
    assert listers == named("engine.completion.auto_pairs")
    assert importers("diffusion_infill.engine.completion.auto_pairs") == named(
        "engine.completion.repeated_text", "engine.completion.copied_lines", "lsp.completion.items"
    )
