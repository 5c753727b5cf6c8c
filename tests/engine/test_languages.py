"""Specification of the language table (engine.languages): the grammars the closure check knows and the
names that choose them. That the clients ask in the table's defaults: tests/clients/test_client_languages.py."""

from collections import Counter

import pytest

from diffusion_infill.engine.languages import (
    LANGUAGES,
    NVIM_DEFAULTS,
    TABLE,
    VSCODE_DEFAULTS,
    from_pack,
    language_for_id,
    language_for_path,
    tree_sitter_language,
)


def test_every_required_language_is_supported():
    assert set(LANGUAGES) >= {
        "python",
        "javascript",
        "typescript",
        "tsx",
        "json",
        "markdown",
    }


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app.py", "python"),
        ("stubs/app.pyi", "python"),
        ("web/app.js", "javascript"),
        ("web/app.mjs", "javascript"),
        ("web/app.cjs", "javascript"),
        ("web/App.jsx", "javascript"),
        ("web/app.ts", "typescript"),
        ("web/app.mts", "typescript"),
        ("web/App.tsx", "tsx"),
        ("package.json", "json"),
        ("tsconfig.jsonc", "json"),
        ("README.md", "markdown"),
        ("notes.markdown", "markdown"),
        ("SHOUTING.PY", "python"),
        ("cmd/main.go", "go"),
        ("src/main.rs", "rust"),
        ("zlib.h", "c"),
        ("Main.java", "java"),
        ("lib/set.rb", "ruby"),
        ("build.sh", "bash"),
        (".github/workflows/ci.yml", "yaml"),
        ("config.yaml", "yaml"),
        ("Makefile", "make"),
        ("docker/Dockerfile", "dockerfile"),
    ],
)
def test_language_for_path_goes_by_extension_or_file_name(path, language):
    assert language_for_path(path) == language


@pytest.mark.parametrize("path", ["archive.tar.gz", ".py", "notes.txt", "matlab_or_objc.m", "LICENSE"])
def test_language_for_path_is_none_for_unknown_files(path):
    assert language_for_path(path) is None


@pytest.mark.parametrize(
    ("language_id", "language"),
    [
        ("python", "python"),
        ("javascript", "javascript"),
        ("javascriptreact", "javascript"),
        ("typescript", "typescript"),
        ("typescriptreact", "tsx"),
        ("json", "json"),
        ("jsonc", "json"),
        ("markdown", "markdown"),
        # the LSP specification's ids for the languages tree-sitter-language-pack brings
        ("shellscript", "bash"),
        ("c", "c"),
        ("cpp", "cpp"),
        ("csharp", "csharp"),
        ("go", "go"),
        ("rust", "rust"),
        ("java", "java"),
        ("ruby", "ruby"),
        ("yaml", "yaml"),
        ("makefile", "make"),
        ("objective-c", "objc"),
        ("git-commit", "gitcommit"),
        # Neovim sends its filetype
        ("sh", "bash"),
        ("cs", "csharp"),
    ],
)
def test_language_for_id_maps_lsp_language_ids(language_id, language):
    assert language_for_id(language_id) == language


@pytest.mark.parametrize("language_id", ["plaintext", "abap", "coffeescript", "Go", "", "cobol"])
def test_language_for_id_is_none_for_unknown_ids(language_id):
    assert language_for_id(language_id) is None


def test_the_pack_brings_the_languages_a_real_model_completes():
    assert set(LANGUAGES) >= {"go", "rust", "c", "cpp", "java", "ruby", "bash", "yaml", "csharp", "kotlin", "php"}


def test_every_row_names_a_checked_language_once():
    names = [language.name for language in TABLE]
    assert set(names) <= set(LANGUAGES)
    assert [name for name, count in Counter(names).items() if count > 1] == []


def test_no_file_name_or_language_id_chooses_two_languages():
    files = Counter(file for language in TABLE for file in language.files)
    ids = Counter(language_id for language in TABLE for language_id in (language.name, *language.ids))
    assert [name for name, count in files.items() if count > 1] == []
    assert [name for name, count in ids.items() if count > 1] == []


def test_every_name_a_client_asks_in_chooses_its_row():
    for language in TABLE:
        for name in (*language.vscode, *language.nvim):
            assert language_for_id(name) == language.name, name


def test_both_clients_ask_in_the_same_grammars():
    assert {language_for_id(name) for name in VSCODE_DEFAULTS} == {language_for_id(name) for name in NVIM_DEFAULTS}


def test_the_first_six_keep_their_own_grammar_packages():
    own = [name for name in LANGUAGES if not from_pack(name)]
    assert own == ["python", "javascript", "typescript", "tsx", "json", "markdown"]
    assert from_pack("go")


@pytest.mark.parametrize("language", ["python", "tsx", "go"])
def test_every_grammar_loads(language):
    assert tree_sitter_language(language).node_kind_count > 0


@pytest.mark.parametrize("language", ["klingon", "cobol"])
def test_a_grammar_the_table_lacks_is_refused(language):
    with pytest.raises(ValueError, match=language):
        tree_sitter_language(language)
