"""Fix JSON on the two outside test suites, as a user runs it: `diffusion-infill fix FILE.json --json`.

The suites are the peers' own tests, read from a checkout of each (never copied into this project):
jsonrepair's `src/index.test.ts` (every `assertRepair(text)`: valid as written, `assertRepair(text,
expected)` and `expect(jsonrepair(text)).toBe(expected)`; the literals decoded by Node) and
json_repair's `tests/test_json_repair.py` and `tests/test_parse_*.py` (every `repair_json(text) ==
expected` with constant arguments, `return_objects=True` comparing the value itself, other keywords
left out). A case whose expected text does not load with a strict JSON parser is left out: it tests
something other than repair (an empty answer, a streaming option).

Each input is written to a temporary `case.json` and fixed by the command line's own `main` (its
dialect, BOM handling and `--json` answer). Per suite: `valid` (the text loads with json.loads, NaN and
Infinity rejected as every strict parser does), `exact` (it loads to the expected value, numbers by
value), `refused` (not fixed and not already valid), `refused_jsonrepair_repairs` (refused where
jsonrepair's output loads), `words_changed` (not exact, and a word or number the expected value keeps
dropped, or one neither the input nor the expected value holds invented: a `null` for a value written
nowhere). Prints a Markdown table, then one JSON object (the `bench`
rows, one per suite) on the last line.

    python -m diffusion_infill.bench.json_suites --jsonrepair JSONREPAIR_CHECKOUT --json-repair JSON_REPAIR_CHECKOUT
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import json
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from diffusion_infill.bench.json_repair_compare import canonical, jsonrepair_outputs
from diffusion_infill.bench.npm_peers import JSONREPAIR, node_for
from diffusion_infill.cli import fix
from diffusion_infill.engine.repair.jsonfix import words

_JS_STRING = r"""(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|`(?:[^`\\$]|\\.)*`)"""
_ASSERT = re.compile(rf"assertRepair\(\s*({_JS_STRING})\s*(?:,\s*({_JS_STRING})\s*)?\)", re.S)
_EXPECT = re.compile(rf"expect\(jsonrepair\(\s*({_JS_STRING})\s*\)\)\.toBe\(\s*({_JS_STRING})\s*\)", re.S)
_DECODE = (  # each line: a JS string literal's source, as JSON; out: its value, as JSON
    "const rl=require('readline').createInterface({input:process.stdin});"
    "rl.on('line',l=>console.log(JSON.stringify((0,eval)(JSON.parse(l)))))"
)


@dataclass(frozen=True)
class Case:
    text: str
    expected: object  # the value a repair should load to


def _strict(text: str):
    """json.loads as strict parsers read JSON: NaN, Infinity and -Infinity are errors."""

    def constant(name: str):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=constant)


def _node_strings(literals: list[str]) -> list[str]:
    node = node_for(JSONREPAIR, "jsonrepair")
    if node is None:
        raise SystemExit("Node is needed to read jsonrepair's tests: run install.sh")
    lines = "".join(json.dumps(literal) + "\n" for literal in literals)
    done = subprocess.run([node, "-e", _DECODE], input=lines, capture_output=True, text=True, check=True, timeout=120)
    return [json.loads(line) for line in done.stdout.splitlines()]


def jsonrepair_cases(checkout: Path) -> list[Case]:
    source = (checkout / "src" / "index.test.ts").read_text(encoding="utf-8")
    pairs = [(m.start(), m.group(1), m.group(2) or m.group(1)) for m in _ASSERT.finditer(source)]
    pairs += [(m.start(), m.group(1), m.group(2)) for m in _EXPECT.finditer(source)]
    pairs.sort()
    decoded = _node_strings([literal for _, text, expected in pairs for literal in (text, expected)])
    return _loadable(list(zip(decoded[::2], decoded[1::2], strict=True)))


def _loadable(pairs: list[tuple[str, str]]) -> list[Case]:
    cases = []
    for text, expected in pairs:
        with contextlib.suppress(ValueError):
            cases.append(Case(text, _strict(expected)))
    return cases


def _python_case(node: ast.Compare) -> Case | None:
    call = node.left
    if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "repair_json" and call.args):
        return None
    keywords = {keyword.arg: keyword.value for keyword in call.keywords}
    if set(keywords) - {"return_objects", "skip_json_loads"} or len(node.ops) != 1:
        return None
    try:
        text = ast.literal_eval(call.args[0])
        expected = ast.literal_eval(node.comparators[0])
    except ValueError:
        return None
    if not isinstance(text, str) or not isinstance(node.ops[0], ast.Eq):
        return None
    as_object = "return_objects" in keywords and ast.literal_eval(keywords["return_objects"]) is True
    if as_object:
        return Case(text, expected)
    if not isinstance(expected, str):
        return None
    with contextlib.suppress(ValueError):
        return Case(text, _strict(expected))
    return None


def json_repair_cases(checkout: Path) -> list[Case]:
    files = [checkout / "tests" / "test_json_repair.py", *sorted((checkout / "tests").glob("test_parse_*.py"))]
    cases = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and (case := _python_case(node)) is not None:
                cases.append(case)
    return cases


def fix_as_file(text: str, folder: Path) -> dict:
    """`diffusion-infill fix case.json --json` on `text`: its JSON answer."""
    path = folder / "case.json"
    path.write_text(text, encoding="utf-8", newline="")
    parser = argparse.ArgumentParser()
    fix.add_arguments(parser)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            fix.main(parser.parse_args([str(path), "--json"]))
        except fix.CliError as error:
            return {"text": text, "fixed": False, "reason": str(error)}
    return json.loads(out.getvalue().splitlines()[-1])


def _drops_or_invents(case: Case, output: str) -> bool:
    """Whether `output` lost a word or number of the expected value, or holds one that neither the input
    nor the expected value does."""
    kept, expected = words(output), words(json.dumps(case.expected, ensure_ascii=False))
    return bool(expected - kept or kept - words(case.text) - expected)


def measure(cases: list[Case], folder: Path, misses: bool = False) -> dict:
    peers = jsonrepair_outputs([case.text for case in cases])
    row = Counter(cases=len(cases))
    for case, peer in zip(cases, peers, strict=True):
        answer = fix_as_file(case.text, folder)
        try:
            loaded = _strict(answer["text"])
        except ValueError:
            loaded, valid = None, False
        else:
            valid = True
        exact = valid and canonical(loaded) == canonical(case.expected)
        refused = not answer["fixed"] and not answer["reason"].startswith("the file is already valid")
        row["valid"] += valid
        row["exact"] += exact
        row["refused"] += refused
        row["refused_jsonrepair_repairs"] += refused and _repairs(peer)
        changed = not exact and _drops_or_invents(case, answer["text"])
        row["words_changed"] += changed
        if misses and not exact:
            label = "MISS, a word dropped or invented" if changed else "MISS"
            print(f"{label} {case.text!r}\n  got {answer['text']!r}\n  want {json.dumps(case.expected)}")
    return dict(row)


def _repairs(output: str | None) -> bool:
    if output is None:
        return False
    try:
        _strict(output)
    except ValueError:
        return False
    return True


def table(rows: dict[str, dict]) -> str:
    lines = ["| suite | cases | valid | exact | refused (jsonrepair repairs) | words dropped or invented |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for name, row in rows.items():
        share = {key: f"{row[key]} ({100 * row[key] / row['cases']:.1f}%)" for key in ("valid", "exact")}
        lines.append(
            f"| {name} | {row['cases']} | {share['valid']} | {share['exact']} "
            f"| {row['refused']} ({row['refused_jsonrepair_repairs']}) | {row['words_changed']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jsonrepair", type=Path, required=True, help="a checkout of josdejong/jsonrepair")
    parser.add_argument("--json-repair", type=Path, required=True, help="a checkout of mangiucugna/json_repair")
    parser.add_argument("--show-misses", action="store_true", help="print every case not repaired exactly")
    args = parser.parse_args()
    suites = {"jsonrepair": jsonrepair_cases(args.jsonrepair), "json_repair": json_repair_cases(args.json_repair)}
    with tempfile.TemporaryDirectory() as folder:
        rows = {name: measure(cases, Path(folder), args.show_misses) for name, cases in suites.items()}
    print(table(rows))
    print(json.dumps({"bench": "json_suites", "command": "fix FILE.json --json", "suites": rows}))


if __name__ == "__main__":
    main()
