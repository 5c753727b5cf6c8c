"""The languages both clients ask in by default are the language table's (engine.languages, docs/closure.md),
under the name that editor gives each (VS Code's languageId, Neovim's filetype): a language added to the
table, or to one client only, fails here until the other lists agree (counted, so a name listed twice fails too)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from diffusion_infill.engine.languages import NVIM_DEFAULTS, VSCODE_DEFAULTS, language_for_id

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


def test_the_vscode_extension_asks_in_the_tables_languages():
    assert Counter(vscode_languages()) == Counter(VSCODE_DEFAULTS)


def test_the_vscode_extension_activates_in_every_language_it_asks_in():
    events = json.loads((CLIENTS / "vscode" / "package.json").read_text())["activationEvents"]
    assert Counter([event.removeprefix("onLanguage:") for event in events]) == Counter(VSCODE_DEFAULTS)


def test_the_vscode_document_selector_is_the_language_list():
    source = (CLIENTS / "vscode" / "src" / "extension.ts").read_text()
    assert "documentSelector: LANGUAGES.map((language) => ({ language }))," in source


def test_the_neovim_plugin_asks_in_the_tables_filetypes():
    assert Counter(nvim_filetypes()) == Counter(NVIM_DEFAULTS)


def test_both_clients_ask_in_the_languages_measured_on_real_files():
    for names in (vscode_languages(), nvim_filetypes()):
        assert MEASURED <= {language_for_id(name) for name in names}
