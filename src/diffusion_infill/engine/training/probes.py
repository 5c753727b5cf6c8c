"""A fixed probe set of completions, decoded during training: loss alone hides collapse."""

from __future__ import annotations

import random
from dataclasses import dataclass

from diffusion_infill.engine.training.corpus import stdlib_files


@dataclass(frozen=True)
class Probe:
    name: str
    prefix: str
    suffix: str
    expected: str  # the rest of the line in the original file


def held_out_line_cases(count: int, seed: int, context_chars: int = 1500) -> list[Probe]:
    """Cursor positions in held-out stdlib files: mid-line, after at least 4 characters of
    code, with the rest of the line (3 to 40 characters) as the expected completion."""
    rng = random.Random(seed)
    files = [doc for doc in stdlib_files(held_out=True) if doc.text.strip()]
    cases = []
    while len(cases) < count:
        doc = rng.choice(files)
        lines = doc.text.splitlines(keepends=True)
        index = rng.randrange(len(lines))
        line = lines[index].rstrip("\n")
        body = line.lstrip()
        if len(body) < 12 or body.startswith("#"):
            continue
        indent = len(line) - len(body)
        cut = indent + rng.randrange(4, len(body) - 2)
        expected = line[cut:]
        if not 3 <= len(expected) <= 40:
            continue
        before = "".join(lines[:index]) + line[:cut]
        after = line[cut:].removeprefix(expected) + "\n" + "".join(lines[index + 1 :])
        cases.append(
            Probe(f"{doc.name}:{index + 1}:{cut + 1}", before[-context_chars:], after[:context_chars], expected)
        )
    return cases
