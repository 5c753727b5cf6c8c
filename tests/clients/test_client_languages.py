"""The languages both clients ask in by default: each has a grammar the server checks closure with
(docs/closure.md), under the name that editor gives it (VS Code's languageId, Neovim's filetype)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from diffusion_infill.lsp.languages import closure_language

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
MEASURED = {"go", "rust", "c", "java", "ruby", "bash", "yaml"}  # measured on real files: docs/closure.md


def vscode_languages() -> list[str]:
    source = (CLIENTS / "vscode" / "src" / "extension.ts").read_text()
    [listed] = re.findall(r"const LANGUAGES = \[([^\]]*)\]", source)
    return re.findall(r"'([^']+)'", listed)


def nvim_filetypes() -> list[str]:
    source = (CLIENTS / "nvim" / "lua" / "diffusion_infill" / "config.lua").read_text()
    [listed] = re.findall(r"filetypes = \{([^}]*)\}", source)
    return re.findall(r"'([^']+)'", listed)


def test_vscode_activates_in_every_language_it_asks_in():
    events = json.loads((CLIENTS / "vscode" / "package.json").read_text())["activationEvents"]
    assert sorted(event.removeprefix("onLanguage:") for event in events) == sorted(vscode_languages())


def test_every_default_language_of_both_clients_has_a_grammar():
    for name in vscode_languages() + nvim_filetypes():
        assert closure_language(name, "file:///x") is not None, name


def test_both_clients_ask_in_the_languages_measured_on_real_files():
    for names in (vscode_languages(), nvim_filetypes()):
        assert MEASURED <= {closure_language(name, "file:///x") for name in names}
