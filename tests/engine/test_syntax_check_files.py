"""The closure check on real files of the languages tree-sitter-language-pack brings
(syntax_check_files/SOURCES.md says where each comes from).

At random cursors (diffusion_infill.bench.closure_languages): the real rest of a line passes,
and a closer typed again while the suffix still holds it is cut, exactly before that closer.
The few retyped closers not cut are measured in docs/closure.md: the cursor sits inside a
string or bracket that prefix + suffix leaves open, so the candidate repairs that break while
it adds the extra closer, and the baseline is no better.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from diffusion_infill.bench.closure_languages import measure

FILES = Path(__file__).parent / "syntax_check_files"
POSITIONS = 60
# language: (file, retyped closers the file has at POSITIONS, of them cut exactly, as measured)
REAL_FILES = {
    "go": ("list.go", 60, 60),
    "rust": ("decode.rs", 60, 57),
    "c": ("gcc_libinit.c", 60, 60),
    "java": ("CallbackContext.java", 60, 60),
    "ruby": ("timeout.rb", 30, 30),
    "bash": ("make.bash", 27, 14),  # 13 misses: the cursor inside the string of a "[ ... ]" test
    "yaml": ("ci.yml", 16, 15),
}


@pytest.fixture(scope="module", params=sorted(REAL_FILES))
def measured(request):
    file, _, _ = REAL_FILES[request.param]
    return request.param, measure(request.param, [FILES / file], POSITIONS, seed=0, per_file=POSITIONS)


def test_the_real_files_parse_without_an_error(measured):
    _, tally = measured
    assert tally.clean_files == tally.files == 1


def test_every_real_continuation_passes(measured):
    _, tally = measured
    assert tally.continuations == POSITIONS
    assert tally.continuations_passed == POSITIONS


def test_retyped_closers_are_cut_exactly_before_the_closer(measured):
    language, tally = measured
    _, closers, cut = REAL_FILES[language]
    assert tally.retyped_closers == closers
    assert tally.retyped_cut_exactly == tally.retyped_cut >= cut
