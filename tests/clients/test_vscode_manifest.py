"""clients/vscode/package.json: a workspace's own settings (a cloned repository's
.vscode/settings.json) cannot choose the command the extension runs, and an untrusted one cannot
choose the model, the engine or the URL that code is sent to. Read from the file itself, so it
needs no Node build; the behaviour in a real VS Code is tests/clients/test_vscode_e2e.py's."""

from __future__ import annotations

import json
from pathlib import Path

MANIFEST = Path(__file__).resolve().parents[2] / "clients" / "vscode" / "package.json"
SCOPES_WITHOUT_WORKSPACE = {"application", "machine"}  # values a workspace's settings can never set
RESTRICTABLE_SCOPES = {"application", "machine", "machine-overridable"}


def manifest() -> dict:
    return json.loads(MANIFEST.read_text())


def scope(name: str) -> str:
    return manifest()["contributes"]["configuration"]["properties"][f"diffusionInfill.{name}"].get("scope", "window")


def test_no_workspace_chooses_the_server_command():
    assert scope("server.command") in SCOPES_WITHOUT_WORKSPACE


def test_an_untrusted_workspace_chooses_neither_the_model_nor_where_code_goes():
    untrusted = manifest()["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"  # runs in Restricted Mode, with the settings below ignored
    for name in ("engine", "url", "model"):
        assert scope(name) in RESTRICTABLE_SCOPES, name  # not resource/window: no per-folder override
        assert f"diffusionInfill.{name}" in untrusted["restrictedConfigurations"], name
