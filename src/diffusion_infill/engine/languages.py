"""The languages the closure check knows, in one table: each grammar, where it comes from, the file
names and LSP languageIds that pick it, and the names both clients ask in it by default.

Adding a language is one row here; tests/engine/test_languages.py fails until the VS Code extension
(src/extension.ts, package.json) and the Neovim plugin (config.lua) list the same defaults.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath

import tree_sitter_javascript
import tree_sitter_json
import tree_sitter_language_pack
import tree_sitter_markdown
import tree_sitter_python
import tree_sitter_typescript
from tree_sitter import Language as Grammar


@dataclass(frozen=True)
class Language:
    """One grammar the closure check parses with, and the names that choose it."""

    name: str  # the grammar's name (tree-sitter-language-pack's, or the own package's)
    files: tuple[str, ...] = ()  # extensions (lower case, with the dot) and whole file names
    ids: tuple[str, ...] = ()  # LSP languageIds and Neovim filetypes other than `name`
    package: Callable[[], object] | None = None  # its own grammar package; None: the pack's
    vscode: tuple[str, ...] = ()  # the VS Code languageIds the extension asks in by default
    nvim: tuple[str, ...] = ()  # the Neovim filetypes the plugin asks in by default


def _default(name: str, files: tuple[str, ...], **fields: typing.Any) -> Language:
    """A language both clients ask in under its own name (docs/closure.md measured these)."""
    return Language(name, files, vscode=(name,), nvim=(name,), **fields)


# The first six keep their own grammar packages (and so their results); tree-sitter-language-pack
# brings every other grammar it ships. An extension that two common languages share (.m:
# Objective-C and MATLAB, .v: Verilog and V) names neither. A languageId that is a grammar's name
# (the LSP specification's list, VS Code's and Neovim's filetypes) needs no `ids` entry.
TABLE: tuple[Language, ...] = (
    _default("python", (".py", ".pyi"), package=tree_sitter_python.language),
    Language(
        "javascript",
        (".js", ".mjs", ".cjs", ".jsx"),
        ids=("javascriptreact",),
        package=tree_sitter_javascript.language,
        vscode=("javascript", "javascriptreact"),
        nvim=("javascript", "javascriptreact"),
    ),
    _default("typescript", (".ts", ".mts", ".cts"), package=tree_sitter_typescript.language_typescript),
    Language(
        "tsx",
        (".tsx",),
        ids=("typescriptreact",),
        package=tree_sitter_typescript.language_tsx,
        vscode=("typescriptreact",),
        nvim=("typescriptreact",),
    ),
    Language(
        "json",
        (".json", ".jsonc"),
        ids=("jsonc",),
        package=tree_sitter_json.language,
        vscode=("json", "jsonc"),
        nvim=("json", "jsonc"),
    ),
    _default("markdown", (".md", ".markdown"), package=tree_sitter_markdown.language),
    Language("bash", (".sh", ".bash"), ids=("shellscript", "sh"), vscode=("shellscript",), nvim=("sh", "bash")),
    Language("bibtex", (".bib",)),
    _default("c", (".c", ".h")),
    Language("clojure", (".clj", ".cljs", ".cljc", ".edn")),
    Language("cmake", (".cmake", "CMakeLists.txt")),
    Language("commonlisp", (".lisp",)),
    _default("cpp", (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".h++")),
    Language("csharp", (".cs",), ids=("cs",)),
    Language("css", (".css",)),
    Language("cuda", (".cu", ".cuh"), ids=("cuda-cpp",)),
    Language("dart", (".dart",)),
    Language("dockerfile", (".dockerfile", "Dockerfile", "Containerfile")),
    Language("elixir", (".ex", ".exs")),
    Language("elm", (".elm",)),
    Language("erlang", (".erl", ".hrl")),
    Language("fish", (".fish",)),
    Language("fortran", (".f90", ".f95", ".f03", ".f08")),
    Language("fsharp", (".fs", ".fsx")),
    Language("gdscript", (".gd",)),
    Language("gitcommit", ids=("git-commit",)),
    Language("gleam", (".gleam",)),
    Language("glsl", (".glsl", ".vert", ".frag")),
    _default("go", (".go",)),
    Language("gomod", ("go.mod",)),
    Language("graphql", (".graphql", ".gql")),
    Language("groovy", (".groovy", ".gradle")),
    Language("haskell", (".hs",)),
    Language("hcl", (".hcl",)),
    Language("html", (".html", ".htm")),
    Language("ini", (".ini",)),
    _default("java", (".java",)),
    Language("julia", (".jl",)),
    Language("kotlin", (".kt", ".kts")),
    Language("latex", (".tex",), ids=("tex",)),
    Language("lua", (".lua",)),
    Language("make", (".mk", "Makefile", "makefile", "GNUmakefile"), ids=("makefile",)),
    Language("meson", ("meson.build",)),
    Language("nim", (".nim",)),
    Language("ninja", (".ninja",)),
    Language("nix", (".nix",)),
    Language("objc", ids=("objective-c",)),
    Language("ocaml", (".ml",)),
    Language("ocaml_interface", (".mli",)),
    Language("odin", (".odin",)),
    Language("pascal", (".pas",), ids=("delphi",)),
    Language("perl", (".pl", ".pm")),
    Language("php", (".php",)),
    Language("powershell", (".ps1", ".psm1")),
    Language("properties", (".properties",)),
    Language("proto", (".proto",)),
    Language("puppet", (".pp",)),
    Language("r", (".r",)),
    Language("racket", (".rkt",)),
    Language("rst", (".rst",)),
    _default("ruby", (".rb", ".rake", ".gemspec", "Gemfile", "Rakefile")),
    _default("rust", (".rs",)),
    Language("scala", (".scala", ".sc")),
    Language("scheme", (".scm",)),
    Language("scss", (".scss",)),
    Language("solidity", (".sol",)),
    Language("sql", (".sql",)),
    Language("starlark", (".bzl", ".star")),
    Language("svelte", (".svelte",)),
    Language("swift", (".swift",)),
    Language("tcl", (".tcl",)),
    Language("terraform", (".tf", ".tfvars")),
    Language("toml", (".toml",)),
    Language("typst", (".typ",)),
    Language("vim", (".vim",)),
    Language("vue", (".vue",)),
    Language("xml", (".xml", ".xsd", ".xsl"), ids=("xsl",)),
    Language("yaml", (".yaml", ".yml"), ids=("dockercompose",), vscode=("yaml",), nvim=("yaml",)),
    Language("zig", (".zig",)),
)

_OWN_PACKAGES = {language.name: language.package for language in TABLE if language.package is not None}
# The pack's COBOL parser never returns, even on "x", and a parse cannot be interrupted.
_BROKEN_PACK_GRAMMARS = frozenset({"cobol"})
_PACK_GRAMMARS = tuple(
    name
    for name in typing.get_args(tree_sitter_language_pack.SupportedLanguage)
    if name not in _OWN_PACKAGES and name not in _BROKEN_PACK_GRAMMARS
)

LANGUAGES: tuple[str, ...] = (*_OWN_PACKAGES, *_PACK_GRAMMARS)  # every name `check` accepts
_LANGUAGE_SET = frozenset(LANGUAGES)
_EXTENSIONS = {file: language.name for language in TABLE for file in language.files if file.startswith(".")}
_FILE_NAMES = {file: language.name for language in TABLE for file in language.files if not file.startswith(".")}
_BY_ID = {language_id: language.name for language in TABLE for language_id in language.ids}

VSCODE_DEFAULTS: tuple[str, ...] = tuple(name for language in TABLE for name in language.vscode)
NVIM_DEFAULTS: tuple[str, ...] = tuple(name for language in TABLE for name in language.nvim)


def is_known(language: str) -> bool:
    """Whether ``language`` names a grammar the closure check parses with."""
    return language in _LANGUAGE_SET


def from_pack(language: str) -> bool:
    """Whether ``language``'s grammar comes from tree-sitter-language-pack (not its own package)."""
    return language not in _OWN_PACKAGES


def language_for_path(path: str) -> str | None:
    """Language name for a file path, judged by its extension (or a known file name)."""
    file = PurePath(path)
    return _FILE_NAMES.get(file.name) or _EXTENSIONS.get(file.suffix.lower())


def language_for_id(language_id: str) -> str | None:
    """Language name for an LSP ``languageId``."""
    language = _BY_ID.get(language_id, language_id)
    return language if is_known(language) else None


def tree_sitter_language(language: str) -> Grammar:
    """The tree-sitter grammar that the closure check parses ``language`` with."""
    if not is_known(language):
        raise ValueError(f"unsupported language: {language!r}")
    if language in _OWN_PACKAGES:
        return Grammar(_OWN_PACKAGES[language]())
    return tree_sitter_language_pack.get_language(language)
