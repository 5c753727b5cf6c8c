"""The model's record in repairs: where Fix JSON or Fix Markdown with the model answers differently
from the deterministic fix alone, which answer is right.

JSON: the generated corpora (diffusion_infill.bench.json_corpora), each case broken from a value a
careful reader expects back; an answer is right when it loads to that value. Markdown: broken copies
(diffusion_infill.bench.markdown_fix.BREAKS) of the installed packages' Markdown documents, each fixed
as a selection of the lines around its damage (a whole README is longer than a repair canvas); of
two answers the one with the smaller edit from the same lines undamaged is right (a tie is neither).
`right`: cases where the model's answer is right and the deterministic one is not; `wrong`: the
reverse; `cases`: every case where the two answers differ. Prints one JSON object.

    python -m diffusion_infill.bench.repair_judge --json-cases 5 --markdown-documents 20
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import asdict, dataclass

import torch

from diffusion_infill.bench.json_corpora import CORPORA, corpus
from diffusion_infill.bench.json_repair_compare import REPORTED_SEED, score
from diffusion_infill.bench.markdown_fix import BREAKS, documents
from diffusion_infill.engine.loading import load
from diffusion_infill.engine.repair.diffusion import DiffusionRepairer
from diffusion_infill.engine.repair.fixes import Fixer, edit_size

WINDOW = 6  # Markdown lines before and after the damage in a selection


@dataclass
class Record:
    right: int = 0  # the model's answer right, the deterministic one not
    wrong: int = 0  # the deterministic answer right, the model's not
    cases: int = 0  # the answers differ
    compared: int = 0  # cases run
    seconds_with: float = 0.0
    seconds_without: float = 0.0


def _timed(record: Record, with_model: Fixer, without: Fixer, run) -> tuple[str, str]:
    started = time.perf_counter()
    model_answer = run(with_model)
    middle = time.perf_counter()
    rules_answer = run(without)
    record.seconds_with += middle - started
    record.seconds_without += time.perf_counter() - middle
    record.compared += 1
    return model_answer, rules_answer


def judge_json(with_model: Fixer, without: Fixer, cases: int, seed: int) -> Record:
    record = Record()
    for index, damage in enumerate(CORPORA.values()):
        for text, intended in corpus(damage, cases, seed + index):
            model_answer, rules_answer = _timed(
                record, with_model, without, lambda fixer, text=text: fixer.fix_json(text).text
            )
            if model_answer == rules_answer:
                continue
            record.cases += 1
            model_right, rules_right = score(model_answer, intended)[1], score(rules_answer, intended)[1]
            record.right += model_right and not rules_right
            record.wrong += rules_right and not model_right
    return record


def _around_damage(before: list[str], after: list[str]) -> tuple[str, str]:
    """The lines of the damaged copy around its first changed line, and the same lines undamaged."""
    first = next(
        (index for index, (old, new) in enumerate(zip(before, after, strict=False)) if old != new),
        min(len(before), len(after)),
    )
    start = max(0, first - WINDOW)
    tail = len(after) - first - WINDOW  # lines after the window, the same in both
    return "\n".join(after[start : first + WINDOW]), "\n".join(before[start : len(before) - max(tail, 0)])


def judge_markdown(with_model: Fixer, without: Fixer, limit: int, seed: int) -> Record:
    record, rng = Record(), random.Random(seed)
    for _, document in documents(limit, max_chars=16_000):
        for damage in BREAKS.values():
            lines = damage(rng, document.split("\n"))
            if lines is None:
                continue
            text, original = _around_damage(document.split("\n"), lines)
            model_answer, rules_answer = _timed(
                record, with_model, without, lambda fixer, text=text: fixer.fix_markdown(text).text
            )
            if model_answer == rules_answer:
                continue
            record.cases += 1
            model_edit, rules_edit = edit_size(original, model_answer), edit_size(original, rules_answer)
            record.right += model_edit < rules_edit
            record.wrong += rules_edit < model_edit
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json-cases", type=int, default=5, help="cases per JSON corpus")
    parser.add_argument("--markdown-documents", type=int, default=20, help="Markdown documents to break")
    parser.add_argument("--seed", type=int, default=REPORTED_SEED)
    parser.add_argument("--model", help="checkpoint (default: the embedded model)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    loaded = load(args.model)
    with_model, without = Fixer(DiffusionRepairer(loaded)), Fixer(None)
    records = {
        "json": judge_json(with_model, without, args.json_cases, args.seed),
        "markdown": judge_markdown(with_model, without, args.markdown_documents, args.seed),
    }
    print(
        json.dumps(
            {
                "model": args.model or "embedded",
                "seed": args.seed,
                "device": str(loaded.model.device),
                **{name: asdict(record) for name, record in records.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
