"""The lsp modules import one another without a circle (type-only imports count too), each room of
lsp/ imports only the rooms it builds on, src/diffusion_infill/engine/ never imports
src/diffusion_infill/lsp/, and neither the settings modules, the server nor a server's engine
(engine: openai) import the model stack."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "diffusion_infill"


def imported_modules(path: Path) -> set[str]:
    """Every module `path` names in an import statement, wherever the statement is."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def package_graph(package: str) -> dict[str, set[str]]:
    modules = {
        ".".join(("diffusion_infill", *path.relative_to(PACKAGE).with_suffix("").parts)): path
        for path in (PACKAGE / package).rglob("*.py")
        if path.stem != "__init__"
    }
    return {name: imported_modules(path) & set(modules) for name, path in modules.items()}


def test_lsp_modules_import_each_other_without_a_circle():
    graph = package_graph("lsp")
    named = {f"diffusion_infill.lsp.{name}" for name in ("server", "fixes.actions", "diagnostics.publisher")}
    assert named <= set(graph)
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as error:
        raise AssertionError(f"import circle: {' -> '.join(error.args[1])}") from None


# What of lsp/ each room may import besides itself (a sub-package or a module of lsp/; the server, which
# wires them together, may import all). The wire and the text are the ground the features stand on;
# the features (completion, fixes, diagnostics) never import one another, except that the repairs run
# in the same kind of worker process as the diagnostics.
BUILDS_ON = {
    "transport": (),
    "text": (),
    "settings": (),
    "languages": (),
    "status": ("settings",),
    "completion": ("text", "settings"),
    "diagnostics": ("text", "languages"),
    "fixes": ("text", "languages", "diagnostics.process"),
    "model_lifecycle": ("completion", "settings", "status"),
}


def _room(path: Path) -> str:
    return path.relative_to(PACKAGE / "lsp").with_suffix("").parts[0]


@pytest.mark.parametrize("room", sorted(BUILDS_ON))
def test_each_lsp_room_imports_only_what_it_builds_on(room):
    lsp = "diffusion_infill.lsp."
    allowed = tuple(lsp + name for name in (room, *BUILDS_ON[room]))
    offenders = {
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path in (PACKAGE / "lsp").rglob("*.py")
        if _room(path) == room
        for name in imported_modules(path)
        if name.startswith(lsp) and not any(name == own or name.startswith(own + ".") for own in allowed)
    }
    assert not offenders


def test_every_lsp_room_but_the_server_is_in_the_layering():
    rooms = {_room(path) for path in (PACKAGE / "lsp").rglob("*.py") if path.name != "__init__.py"}
    assert rooms - set(BUILDS_ON) == {"server"}


def test_engine_never_imports_lsp():
    lsp = "diffusion_infill.lsp"
    offenders = {
        str(path.relative_to(PACKAGE))
        for path in (PACKAGE / "engine").rglob("*.py")
        if any(name == lsp or name.startswith(lsp + ".") for name in imported_modules(path))
    }
    assert offenders == set()


def heavy_imports(module: str) -> list[str]:
    """What of the model stack (torch, transformers) and the HTTP client a fresh interpreter has
    imported once it has imported `module`."""
    heavy = ("torch", "transformers", "openai")
    probe = f"import json, sys, {module}; print(json.dumps(sorted(name for name in {heavy!r} if name in sys.modules)))"
    return json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)


@pytest.mark.parametrize("module", ["diffusion_infill.lsp.settings", "diffusion_infill.engine.settings"])
def test_settings_modules_import_no_model_stack(module):
    """Reading and checking settings (the server before its model loads, the command line's options)
    does not pay for torch and transformers: a fresh interpreter imports the module and looks."""
    assert heavy_imports(module) == []


def test_the_server_imports_the_model_stack_only_to_load_a_model():
    """The server answers `initialize`, diagnostics, code actions' rules and document drafts before
    torch, transformers (seconds) and the OpenAI client are imported: the engine thread imports them
    when it loads a model or connects to a server (lsp.completion.worker)."""
    assert heavy_imports("diffusion_infill.lsp.server") == []


def test_a_servers_engine_imports_no_model_stack():
    """`engine: openai` (engine.remote.client) needs the HTTP client only: connecting to a server
    imports neither torch nor transformers on the engine thread."""
    assert heavy_imports("diffusion_infill.engine.remote.client") == ["openai"]
