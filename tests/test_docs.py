"""The README, ARCHITECTURE and docs/ point only at files and headings that exist: a link a move or a
renamed heading breaks fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "ARCHITECTURE.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "clients").glob("*/README.md")),
]


def local_links(page: Path) -> list[str]:
    """Link and image targets within the repository (not a URL), anchors kept: `docs/x.md#part`, `#part`."""
    links = []
    for block in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
        for token in block.children or []:
            target = token.attrGet("href") if token.type == "link_open" else token.attrGet("src")
            if target and "://" not in target and not target.startswith("mailto:"):
                links.append(target)
    return links


def local_targets(page: Path) -> list[str]:
    """The files those links name (an anchor alone names its own page)."""
    return [target for link in local_links(page) if (target := link.split("#", 1)[0])]


def heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: the text lowercased, punctuation but `-` and `_`
    dropped, spaces made `-`, a repeated one suffixed `-1`, `-2`, ..."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    tokens = MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8"))
    for opening, inline in zip(tokens, tokens[1:], strict=False):  # a heading_open is always followed by its inline
        if opening.type != "heading_open":
            continue
        text = "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_local_link_names_a_file_that_exists(page):
    missing = [target for target in local_targets(page) if not (page.parent / target).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_anchor_names_a_heading_of_its_page(page):
    broken = []
    for link in local_links(page):
        target, _, anchor = link.partition("#")
        linked = page.parent / target if target else page
        if anchor and linked.suffix == ".md" and linked.exists() and anchor not in heading_anchors(linked):
            broken.append(link)
    assert not broken, f"{page.relative_to(ROOT)} links to headings that are not there: {broken}"


# A path in code (`tests/cli/test_errors.py`), from the repository root; placeholders (RUN, DIR) aside.
REPOSITORY_PATH = re.compile(r"^(?:\./)?((?:src|tests|docs|clients|scripts|\.ci)/[\w./-]*[\w/])(?:::[\w\[\]-]+)?$")


def named_paths(page: Path) -> list[str]:
    """Repository paths a page names in inline code: `tests/...`, `src/...`, `docs/...`."""
    paths = []
    for block in MarkdownIt("commonmark").parse(page.read_text(encoding="utf-8")):
        for token in block.children or []:
            for word in token.content.split() if token.type == "code_inline" else []:
                if match := REPOSITORY_PATH.match(word.rstrip(",;:")):
                    paths.append(match[1])
    return paths


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_path_named_in_code_exists(page):
    missing = [path for path in named_paths(page) if not (ROOT / path).exists()]
    assert not missing, f"{page.relative_to(ROOT)} names {missing}"


def test_architecture_names_every_module():
    """A reader finds any module from ARCHITECTURE.md alone."""
    picture = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    package = ROOT / "src" / "diffusion_infill"
    modules = [
        path
        for path in package.rglob("*.py")
        if path.name != "__init__.py" and "node_modules" not in path.parts and "samples" not in path.parts
    ]
    unnamed = [str(path.relative_to(package)) for path in modules if not re.search(rf"\b{path.stem}\b", picture)]
    assert len(modules) > 50 and not unnamed, f"ARCHITECTURE.md does not name {unnamed}"
