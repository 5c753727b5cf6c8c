"""Fix JSON against json_repair (the PyPI library) on generated broken-JSON corpora.

Method: valid documents are generated from a seed (nested objects and arrays of words,
sentences with commas and apostrophes, integers, floats, booleans and nulls; half printed
with indent=2, half on one line). Each corpus breaks them one way (trailing commas,
missing closers, missing commas, missing colons, unquoted keys, single quotes, comments,
Python literals, an unclosed string, or three of those at once); a break that leaves the
text loading is drawn again. The intended document is the generated one, so every case
has a known answer. This is evaluation data, generated here; none of it is training data.

Per case, both repairers get the broken text. `valid`: the output loads with json.loads.
`exact`: it loads to the intended document (compared as canonical JSON, so 1 != true).
`diffusion valid / won`: cases where a diffusion candidate loaded, and where it was chosen.
Prints a Markdown table, then one JSON object on the last line of stdout.

    python -m bench.json_repair_compare --cases 20          # per corpus, with the embedded model
    python -m bench.json_repair_compare --cases 20 --no-model
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from importlib import metadata

import json_repair
import torch

from engine.fixes import Fixer, FixResult
from engine.jsonfix import tokenize
from engine.loading import load
from engine.repair import DiffusionRepairer

WORDS = ("alpha", "beta", "gamma", "delta", "name", "id", "size", "tags", "owner", "items", "count", "price",
         "enabled", "created", "notes", "path", "level", "score", "color", "region", "user_id", "max-retries")
PHRASES = ("hello world", "it's fine", "one, two, three", "C:/tmp/file.txt", "x = 1", "a {brace} here",
           "semi; colon", "done.", "tab\tchar", "Ünïcode ✓")
COMMENTS = ("// note", "# python style", "/* block */")


def generate(rng: random.Random, depth: int = 0):
    """A random JSON value; objects and arrays get shallower with depth."""
    roll = rng.random()
    if depth < 3 and roll < (0.6 if depth == 0 else 0.3):
        keys = rng.sample(WORDS, rng.randint(1, 5))
        return {key: generate(rng, depth + 1) for key in keys}
    if depth < 3 and roll < (0.75 if depth == 0 else 0.45):
        return [generate(rng, depth + 1) for _ in range(rng.randint(1, 4))]
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(WORDS)
    if kind == 1:
        return rng.choice(PHRASES)
    if kind == 2:
        return rng.randint(-1000, 100000)
    if kind == 3:
        return round(rng.uniform(-100, 100), rng.randint(1, 4))
    if kind == 4:
        return rng.choice([True, False])
    return None


def document(rng: random.Random):
    """A top-level object or array with at least a few members."""
    while True:
        value = generate(rng)
        if isinstance(value, dict | list) and len(json.dumps(value)) > 40:
            return value


def serialize(rng: random.Random, value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) if rng.random() < 0.5 else \
        json.dumps(value, ensure_ascii=False)


# Breaking valid JSON text. Each function returns the broken text (it may be unchanged).

def _significant(text: str):
    return [token for token in tokenize(text) if token.kind != "space"]


def _keys(text: str):
    tokens = _significant(text)
    return [token for token, after in zip(tokens, tokens[1:], strict=False)
            if token.kind == "string" and after.text == ":"]


def _edit(text: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def trailing_commas(rng, text):
    tokens = _significant(text)
    places = [before.end for before, token in zip(tokens, tokens[1:], strict=False)
              if token.text in "]}" and before.text not in "[{"]
    return _edit(text, [(end, end, ",") for end in rng.sample(places, min(len(places), rng.randint(1, 2)))])


def missing_closers(rng, text):
    stripped = text.rstrip()
    closers = []
    index = len(stripped)
    while index > 0 and stripped[index - 1] in "]} \n":
        index -= 1
        if stripped[index] in "]}":
            closers.append(index)
    return stripped[: closers[rng.randrange(len(closers))]] if closers else text


def missing_commas(rng, text):
    commas = [token for token in _significant(text) if token.text == ","]
    return _edit(text, [(t.start, t.end, "") for t in rng.sample(commas, min(len(commas), rng.randint(1, 2)))])


def missing_colons(rng, text):
    colons = [token for token in _significant(text) if token.text == ":"]
    return _edit(text, [(t.start, t.end, " ") for t in rng.sample(colons, min(len(colons), rng.randint(1, 2)))])


def unquoted_keys(rng, text):
    return _edit(text, [(key.start, key.end, json.loads(key.text)) for key in _keys(text)])


def single_quotes(rng, text):
    edits = []
    for token in _significant(text):
        if token.kind == "string":
            body = json.loads(token.text)
            escaped = json.dumps(body, ensure_ascii=False)[1:-1].replace('\\"', '"').replace("'", "\\'")
            edits.append((token.start, token.end, f"'{escaped}'"))
    return _edit(text, edits)


def comments(rng, text):
    if "\n" in text:
        lines = text.split("\n")
        for index in rng.sample(range(len(lines)), min(len(lines), rng.randint(1, 3))):
            comment = rng.choice(COMMENTS)
            lines[index] = lines[index] + " " + comment if index else comment + "\n" + lines[index]
        return "\n".join(lines)
    commas = [token for token in _significant(text) if token.text == ","]
    return _edit(text, [(t.end, t.end, " /* note */") for t in rng.sample(commas, min(len(commas), 2))])


def python_literals(rng, text):
    names = {"true": "True", "false": "False", "null": "None"}
    return _edit(text, [(t.start, t.end, names[t.text]) for t in _significant(text) if t.text in names])


def unclosed_string(rng, text):
    tokens = _significant(text)
    values = [token for token, before in zip(tokens[1:], tokens, strict=False)
              if token.kind == "string" and before.text in ":[," and token not in _keys(text)]
    if not values:
        return text
    token = rng.choice(values)
    return _edit(text, [(token.end - 1, token.end, "")])


def mixed(rng, text):
    for damage in rng.sample(SINGLE, 3):
        text = damage(rng, text)
    return text


SINGLE: list[Callable[[random.Random, str], str]] = [
    trailing_commas, missing_closers, missing_commas, missing_colons, unquoted_keys, single_quotes, comments,
    python_literals, unclosed_string]
CORPORA = {damage.__name__.replace("_", " "): damage for damage in [*SINGLE, mixed]}


def corpus(damage, cases: int, seed: int) -> list[tuple[str, object]]:
    """`cases` (broken text, intended value) pairs; breaks that still load are drawn again."""
    rng, out = random.Random(seed), []
    while len(out) < cases:
        value = document(rng)
        broken = damage(rng, serialize(rng, value))
        try:
            json.loads(broken)
        except json.JSONDecodeError:
            out.append((broken, value))
    return out


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def score(output: str | None, intended) -> tuple[bool, bool]:
    """(valid, exact) for one repaired output."""
    try:
        loaded = json.loads(output) if output is not None else None
    except (json.JSONDecodeError, TypeError):
        return False, False
    if output is None:
        return False, False
    return True, canonical(loaded) == canonical(intended)


def ours(fixer: Fixer, broken: str) -> FixResult:
    return fixer.fix_json(broken)


def theirs(broken: str) -> str | None:
    try:
        return json_repair.repair_json(broken)
    except Exception:  # the library raising on a case counts as no valid output
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", type=int, default=20, help="cases per corpus")
    parser.add_argument("--seed", type=int, default=20261202)
    parser.add_argument("--model", help="checkpoint (default: the embedded model)")
    parser.add_argument("--no-model", action="store_true", help="deterministic candidates only")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    repairer = None
    if not args.no_model:
        loaded = load(args.model)
        repairer = DiffusionRepairer(loaded) if loaded.spec is not None else None
    fixer = Fixer(repairer)

    rows = {}
    totals = {"cases": 0, "ours_valid": 0, "ours_exact": 0, "json_repair_valid": 0, "json_repair_exact": 0,
              "diffusion_valid": 0, "diffusion_won": 0}
    seconds = {"ours": 0.0, "json_repair": 0.0}
    for index, (name, damage) in enumerate(CORPORA.items()):
        row = dict.fromkeys(totals, 0)
        for broken, intended in corpus(damage, args.cases, args.seed + index):
            started = time.perf_counter()
            result = ours(fixer, broken)
            mine = result.text if result.fixed else None
            seconds["ours"] += time.perf_counter() - started
            row["diffusion_valid"] += "diffusion" in result.valid_sources  # a diffusion candidate loaded
            row["diffusion_won"] += result.source == "diffusion"
            started = time.perf_counter()
            other = theirs(broken)
            seconds["json_repair"] += time.perf_counter() - started
            for prefix, output in (("ours", mine), ("json_repair", other)):
                valid, exact = score(output, intended)
                row[f"{prefix}_valid"] += valid
                row[f"{prefix}_exact"] += exact
            row["cases"] += 1
        rows[name] = row
        for key in totals:
            totals[key] += row[key]

    print("| corpus | cases | Fix JSON valid | Fix JSON exact | json_repair valid | json_repair exact "
          "| diffusion valid / won |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, row in [*rows.items(), ("all", totals)]:
        print(f"| {name} | {row['cases']} | {row['ours_valid']} | {row['ours_exact']} | "
              f"{row['json_repair_valid']} | {row['json_repair_exact']} | "
              f"{row['diffusion_valid']} / {row['diffusion_won']} |")
    print(json.dumps({"corpora": rows, "all": totals, "model": None if args.no_model else (args.model or "embedded"),
                      "json_repair_version": metadata.version("json_repair"),
                      "ms_per_case": {key: round(1000 * value / max(1, totals["cases"]), 2)
                                      for key, value in seconds.items()}}))


if __name__ == "__main__":
    main()
