"""JSON or JSONC: the editors' convention, one rule for the server (by languageId) and the command line
(by file name).

A file is JSON with Comments where VS Code opens it as `jsonc`. VS Code's own lists (microsoft/vscode,
`contributes.languages`, id `jsonc`): extensions/configuration-editing/package.json (commit 0161fdd9:
extensions `.code-workspace`, `language-configuration.json`, `icon-theme.json`, `color-theme.json`;
filenames `settings.json`, `launch.json`, `tasks.json`, `keybindings.json`, `extensions.json`,
`argv.json`, `profiles.json`, `devcontainer.json`, `.devcontainer.json`) and extensions/json/package.json
(commit 02b22110: `.code-snippets`, `tsconfig.json`, `jsconfig.json`). Added as the editors' convention
(issue 51, Neovim's and the TypeScript tooling's): `.jsonc`, `.babelrc`, `.eslintrc.json` and the
`tsconfig.*.json` / `jsconfig.*.json` variants. Every other `.json` file, and languageId `json`, is JSON:
a fix writes what strict parsers load.
"""

from __future__ import annotations

import fnmatch
from pathlib import PurePath

JSONC_LANGUAGE = "jsonc"
# VS Code's "extensions" of jsonc: a file name's end
JSONC_ENDINGS = (
    ".jsonc",
    ".code-workspace",
    ".code-snippets",
    "language-configuration.json",
    "icon-theme.json",
    "color-theme.json",
)
JSONC_NAMES = frozenset(
    {
        "settings.json",
        "launch.json",
        "tasks.json",
        "keybindings.json",
        "extensions.json",
        "argv.json",
        "profiles.json",
        "devcontainer.json",
        ".devcontainer.json",
        ".babelrc",
        ".eslintrc.json",
        "tsconfig.json",
        "jsconfig.json",
    }
)
JSONC_PATTERNS = ("tsconfig.*.json", "jsconfig.*.json", "tsconfig-*.json", "jsconfig-*.json")


def jsonc_name(path: str) -> bool:
    """Whether VS Code opens the file at `path` as JSON with Comments."""
    name = PurePath(path).name.lower()
    return (
        name in JSONC_NAMES
        or name.endswith(JSONC_ENDINGS)
        or any(fnmatch.fnmatchcase(name, pattern) for pattern in JSONC_PATTERNS)
    )


def is_jsonc(language_id: str | None = None, path: str | None = None) -> bool:
    """The dialect of a document: its languageId decides when the editor gave one, else its file name."""
    if language_id is not None:
        return language_id == JSONC_LANGUAGE
    return path is not None and jsonc_name(path)
