"""Fix Markdown judged by markdownlint (a real Node process, src/diffusion_infill/bench/markdownlint) and by a
CommonMark renderer (markdown-it-py): on valid documents of installed packages it changes nothing, and on
broken ones it adds no violation and leaves what it did not repair rendering the same."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import pytest

from diffusion_infill.bench.markdown_fix import (
    BREAKS,
    FIX_RULES,
    MARKDOWNLINT,
    documents,
    fix,
    lint,
    untouched_render_alike,
)
from diffusion_infill.bench.npm_peers import node_for
from diffusion_infill.engine.repair.markdown_rules import problems

pytestmark = pytest.mark.skipif(
    node_for(MARKDOWNLINT, "markdownlint") is None,
    reason="needs Node 20+ and `npm ci` in src/diffusion_infill/bench/markdownlint (install.sh does it)",
)

DOCUMENTS, MAX_CHARS = 30, 16_000  # a modest corpus: markdownlint takes a good part of a second per document
BROKEN = {
    "fences without blank lines": "# Notes\n\nSteps:\n```sh\nmake\n```\nThen *run* it.\n",
    "fence without a language": '# Notes\n\n```\n{"a": 1}\n```\n\n- one\n- two\n',
    "unclosed fence in a list item": "# Notes\n\n- item\n\n  ```sh\n  make\n",
    "short table row": "# Notes\n\n| name | size |\n| --- | --- |\n| a |\n| b | 2 |\n\nAfter **the** table.\n",
    "unclosed emphasis": "# Notes\n\nSome **bold text.\n\n> quoted `code\n",
}


@dataclass(frozen=True)
class Judged:
    corpus: str  # "valid", a BREAKS name, or "example"
    before: str
    after: str
    lint_before: Counter
    lint_after: Counter
    original: str  # what `before` is a broken copy of (itself for valid documents and examples)
    lint_original: Counter


@pytest.fixture(scope="module")
def judged() -> list[Judged]:
    """Every document before and after the fix, all linted in one markdownlint process."""
    valid = [text for _, text in documents(DOCUMENTS, MAX_CHARS)]
    assert len(valid) >= 20, "the installed packages should bring at least 20 Markdown documents"
    rng = random.Random(0)
    pairs = [("valid", text, text) for text in valid] + [("example", text, text) for text in BROKEN.values()]
    for name, damage in BREAKS.items():
        pairs += [
            (name, "\n".join(lines), text) for text in valid if (lines := damage(rng, text.split("\n"))) is not None
        ]
    fixed = [fix(text) for _, text, _ in pairs]
    found = lint([text for _, text, _ in pairs] + fixed + [original for _, _, original in pairs])
    count = len(pairs)
    return [
        Judged(name, text, new, found[index], found[count + index], original, found[2 * count + index])
        for index, ((name, text, original), new) in enumerate(zip(pairs, fixed, strict=True))
    ]


def test_valid_documents_are_left_byte_identical(judged):
    valid = [item for item in judged if item.corpus == "valid"]
    clean = [item for item in valid if not FIX_RULES & set(item.lint_before)]  # nothing for Fix Markdown to repair
    assert clean and all(item.after == item.before for item in clean)


def test_a_fix_adds_no_violation_anywhere(judged):
    # A fence closed where its code ends shows the prose the damage had made code: what the original
    # document has there is not added.
    assert [item.before for item in judged if item.lint_after - (item.lint_before | item.lint_original)] == []


def test_what_a_fix_did_not_repair_renders_the_same(judged):
    assert [
        item.before
        for item in judged
        if not untouched_render_alike(item.before, item.after) and not untouched_render_alike(item.original, item.after)
    ] == []


def test_broken_copies_and_examples_are_repaired(judged):
    broken = [item for item in judged if item.corpus != "valid"]
    assert {item.corpus for item in broken} == {"example", *BREAKS}
    assert [item.before for item in broken if problems(item.after)] == []
    assert all(item.after != item.before for item in judged if item.corpus == "example")


def test_the_render_check_sees_a_block_the_fix_changed_without_touching_it():
    assert untouched_render_alike("# A\n\ntext\n", "# A\n\ntext\n\nmore\n")
    assert not untouched_render_alike("[x]\n\nmore\n", "[x]\n\nmore\n\n[x]: https://example.org\n")
