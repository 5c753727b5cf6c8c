"""install.sh says what it is doing: a line per stage, in order, before the stage's quiet pip or npm."""

from __future__ import annotations

import re
from pathlib import Path

INSTALL = Path(__file__).resolve().parents[1] / "install.sh"
STAGE = re.compile(r'^\s*say "(\d)/(\d) ')
QUIET_WORK = re.compile(r"-m venv|pip install|npm ci")


def test_every_stage_is_announced_before_its_work():
    lines = INSTALL.read_text().splitlines()
    announced = [(int(m[1]), int(m[2])) for line in lines if (m := STAGE.match(line))]
    assert sorted({stage for stage, _ in announced}) == [1, 2, 3, 4] and {total for _, total in announced} == {4}
    for number, line in enumerate(lines):
        if QUIET_WORK.search(line) and not line.lstrip().startswith(("#", "say ")):
            before = lines[max(0, number - 4) : number]
            assert any(STAGE.match(earlier) for earlier in before), f"install.sh line {number + 1} runs unannounced"
