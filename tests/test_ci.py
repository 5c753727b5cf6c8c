""".ci/run checks that the tests leave the checkout as it was (.ci/check-clean, before and after
them), and the editors' pictures reach docs/img only when asked (tests/clients/screenshot.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.clients import screenshot

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / ".ci" / "check-clean"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "kept.txt").write_text("as committed\n")
    git(tmp_path, "add", "kept.txt")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    return tmp_path


def check(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(CHECK), "after the tests"], cwd=repo, capture_output=True, text=True)


def test_a_clean_checkout_passes(repo):
    done = check(repo)
    assert done.returncode == 0 and done.stderr == ""


def test_a_changed_or_new_file_fails_the_run_and_is_named(repo):
    (repo / "kept.txt").write_text("rewritten by a test\n")
    (repo / "new.png").write_bytes(b"\x89PNG")
    done = check(repo)
    assert done.returncode == 1
    assert "after the tests, the checkout is not clean" in done.stderr
    assert " M kept.txt" in done.stderr and "?? new.png" in done.stderr


def test_ci_run_checks_before_and_after_the_tests():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    checks = [number for number, line in enumerate(lines) if line.startswith("bash .ci/check-clean")]
    tests = next(number for number, line in enumerate(lines) if "pytest" in line and not line.startswith("#"))
    assert len(checks) == 2 and checks[0] < tests < checks[1] == len(lines) - 1


def test_a_picture_reaches_docs_img_only_when_asked(tmp_path, monkeypatch):
    picture = tmp_path / "editor.png"
    picture.write_bytes(b"\x89PNG")
    monkeypatch.setattr(screenshot, "DOCS_IMAGES", tmp_path / "docs")
    (tmp_path / "docs").mkdir()
    monkeypatch.delenv(screenshot.UPDATE_VARIABLE, raising=False)
    assert not screenshot.publish(picture) and not (tmp_path / "docs" / "editor.png").exists()
    monkeypatch.setenv(screenshot.UPDATE_VARIABLE, "1")
    assert screenshot.publish(picture) and (tmp_path / "docs" / "editor.png").read_bytes() == b"\x89PNG"
