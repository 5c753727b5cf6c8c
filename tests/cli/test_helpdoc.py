"""docs/cli.md shows each command's `--help` as it is: an option added, removed or changed in the
parser and not on the page (run `python -m diffusion_infill.cli.helpdoc`) fails here."""

from __future__ import annotations

from diffusion_infill.cli.helpdoc import PAGE, commands, help_text, render


def test_the_page_shows_the_help_of_every_command():
    assert commands(PAGE.read_text()) == ["", "complete", "fix", "serve", "train", "bench"]


def test_the_page_equals_the_help_the_parser_prints():
    page = PAGE.read_text()
    assert render(page) == page, "docs/cli.md is stale: run `python -m diffusion_infill.cli.helpdoc`"


def test_every_option_of_the_parser_is_on_the_page():
    """The help itself lists every option (a parser option with help=SUPPRESS would not be)."""
    page = PAGE.read_text()
    for command in ("complete", "fix", "serve", "train", "bench"):
        for option in ("--help", *{word.strip("[],") for word in help_text(command).split() if word.startswith("--")}):
            assert option in page, f"{command} {option}"
