"""`diffusion-infill fix PATH [--range L1:C1-L2:C2]`: the code actions, headless.

The whole file, or the range, is fixed as JSON or Markdown (or regenerated) by the same
diffusion_infill.engine.repair.fixes code the server uses; the file is written only with --write. A file that
is not UTF-8 is an input error (one line, exit 2); one with nothing to fix is a success
(exit 0, nothing written), and without --range the messages speak of the file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from diffusion_infill.cli import remote
from diffusion_infill.cli.atomic import replace_text
from diffusion_infill.cli.inputs import CliError, plural, read_text
from diffusion_infill.cli.models import add_model_options, check_device, check_model, load_model, start_torch
from diffusion_infill.engine.languages import language_for_path
from diffusion_infill.engine.repair import jsonfix
from diffusion_infill.engine.repair.fixes import Fixer, FixResult, Surroundings

_RANGE = re.compile(r"^(\d+):(\d+)-(\d+):(\d+)$")
_BOM = "\ufeff"  # a UTF-8 byte order mark, as read
SLOW_S = 1.0  # a fix longer than this says what it is doing


class RangeError(CliError):
    """--range does not name a part of the file."""


@dataclass(frozen=True)
class Selection:
    start: int  # character offsets into the file
    end: int

    @classmethod
    def parse(cls, spec: str | None, text: str) -> Selection:
        """L1:C1-L2:C2, 1-based, columns in characters, the end exclusive; None: the whole text."""
        if spec is None:
            return cls(0, len(text))
        match = _RANGE.match(spec)
        if not match:
            raise RangeError(f"expected --range L1:C1-L2:C2 with 1-based numbers, got {spec!r}")
        line1, column1, line2, column2 = map(int, match.groups())
        start, end = _offsets(text, (line1, column1), (line2, column2))
        if start > end:
            raise RangeError(f"--range {spec} ends before it starts")
        return cls(start, end)


def _offsets(text: str, *places: tuple[int, int]) -> list[int]:
    """The offsets in `text` of 1-based (line, column) places, columns in characters, its lines ending
    where the server's do (lsp.text.positions)."""
    # Imported here: numpy would cost a whole-file fix (no --range) a tenth of a second, half its run.
    from diffusion_infill.lsp.text.positions import ColumnOutOfRange, LineOutOfRange, Lines

    lines, offsets = Lines(text), []
    for line, column in places:
        try:
            offsets.append(lines.character_offset(line - 1, column - 1))
        except LineOutOfRange:
            counted = plural(len(text.splitlines()), "line")  # what an editor numbers: a final newline ends a line
            raise RangeError(f"line {line} is out of range: the file has {counted}") from None
        except ColumnOutOfRange as error:
            characters = plural(error.length, "character")
            raise RangeError(f"column {column} is out of range: line {line} has {characters}") from None
    return offsets


def pick_kind(kind: str, path: Path, selected: str) -> str:
    """What to do with the selection: as asked, else by the file's language and the text's look."""
    if kind != "auto":
        return kind
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"  # one document a line, each fixed alone
    if jsonfix.jsonc_name(str(path)):
        return "jsonc"  # VS Code opens it as JSON with Comments: comments and trailing commas are kept
    language = language_for_path(str(path))
    if selected.lstrip()[:1] in ("{", "[") or language == "json":
        return "json"  # comments dropped (and counted): strict parsers load what a fix writes
    if language == "markdown":
        return language
    raise RangeError(f"cannot tell how to fix {path.name}: pass --kind json, jsonc, jsonl, markdown or regenerate")


def fix_text(fixer: Fixer, kind: str, text: str, selection: Selection, path: Path) -> FixResult:
    """The fix of the selection; the result's text is the selection's."""
    selected = text[selection.start : selection.end]
    around = Surroundings(text[: selection.start], text[selection.end :], language_for_path(str(path)))
    action = {
        "json": fixer.fix_json,
        "jsonc": fixer.fix_jsonc,
        "jsonl": fixer.fix_json_lines,
        "markdown": fixer.fix_markdown,
        "regenerate": fixer.regenerate,
    }
    return action[pick_kind(kind, path, selected)](selected, around)


def _said_when_slow(doing: str, work: Callable[[], FixResult]) -> FixResult:
    """`work()`; when it takes longer than a second, one line on stderr says what it is doing."""
    timer = threading.Timer(SLOW_S, lambda: print(f"diffusion-infill: {doing}...", file=sys.stderr, flush=True))
    timer.daemon = True
    timer.start()
    try:
        return work()
    finally:
        timer.cancel()


def run(
    fixer: Fixer,
    path: Path,
    text: str,
    selection: Selection,
    kind: str,
    as_json: bool,
    write: bool,
    ranged: bool = True,
    bom: str = "",
) -> int:
    """Prints the fixed text (or one JSON object); 0 when fixed or nothing is broken, 1 when no
    valid fix exists. `ranged`: a --range was given (else the reasons speak of the file); `bom`: the
    byte order mark `text` was read with, written back before it."""
    picked = pick_kind(kind, path, text[selection.start : selection.end])
    doing = f"fixing {path.name} ({selection.end - selection.start:,} characters, --kind {picked})"
    result = _said_when_slow(doing, lambda: fix_text(fixer, kind, text, selection, path))
    if not ranged and result.reason is not None:
        result = replace(result, reason=result.reason.replace("the selection", "the file"))
    whole = text[: selection.start] + result.text + text[selection.end :]
    dropped = jsonfix.dropped_comments(text[selection.start : selection.end], result.text) if result.fixed else 0
    return report(path, whole, result, as_json, write, dropped, bom)


def report(
    path: Path, whole: str, result: FixResult, as_json: bool, write: bool, dropped: int = 0, bom: str = ""
) -> int:
    """Writes the file (with --write, when fixed: `bom`, the byte order mark it was read with, before it)
    and says what happened: the fixed text (without a BOM: JSON parsers reject one), or with --write one
    line naming what was written, or one JSON object; the exit status."""
    if write and result.fixed:
        replace_text(path, bom + whole)  # line endings as they are in the text
    lost = f"dropped {plural(dropped, 'comment')}: only // and /* */ comments are kept, and only as JSONC"
    if as_json:
        answer = {"text": whole, "fixed": result.fixed, "reason": result.reason}
        print(json.dumps(answer | ({"dropped_comments": dropped} if dropped else {})))
        return 0 if result.fixed or result.already_valid else 1
    if write and result.fixed:
        print(f"diffusion-infill: wrote {path} ({plural(len(bom + whole), 'character')})")
    elif not write:
        sys.stdout.write(whole)
    if dropped:
        print(f"diffusion-infill: {lost}", file=sys.stderr)
    if not result.fixed:
        verdict = "nothing to fix" if result.already_valid else "not fixed"
        print(f"diffusion-infill: {verdict}: {result.reason}", file=sys.stderr)
    return 0 if result.fixed or result.already_valid else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="the file (JSON, JSONC or Markdown; others with --kind)")
    parser.add_argument(
        "--range", metavar="L1:C1-L2:C2", help="only this part (1-based, columns in characters, end exclusive)"
    )
    parser.add_argument(
        "--kind",
        choices=("auto", "json", "jsonc", "jsonl", "markdown", "regenerate"),
        default="auto",
        help="what to do (default: by the text and the file's extension)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    parser.add_argument("--write", action="store_true", help="write the fixed text back to the file")
    parser.add_argument(
        "--no-model",
        action="store_true",
        help="deterministic repairs only, the default (kept for scripts that pass it)",
    )
    add_model_options(parser, optional=True)
    remote.add_options(parser)


def loads_model(args: argparse.Namespace, kind: str) -> bool:
    """Whether `fix` uses a model: asked for with --model (or --engine openai), or needed by --kind
    regenerate. Without one the deterministic repairs answer alone: measured, the embedded model's
    candidates changed almost no answer and cost seconds of loading (docs/fixes.md)."""
    wanted = args.model is not None or args.engine == "openai" or kind == "regenerate"
    if wanted and args.no_model:
        raise CliError(
            "--no-model and "
            + ("--kind regenerate" if kind == "regenerate" and args.model is None else "--model")
            + " ask for opposite things: pass one of them"
        )
    return wanted


def main(args: argparse.Namespace) -> int:
    """Checks the file, the range and the model, then fixes."""
    text = read_text(args.path, exact=True)
    bom = _BOM if text.startswith(_BOM) else ""  # kept as it is, out of the repairs' way and the columns
    text = text[len(bom) :]
    if args.range is None and not text.strip():  # the same answer whatever the kind
        empty = FixResult(text, False, "the file is empty", already_valid=True)
        return report(args.path, text, empty, args.json, args.write)
    selection = Selection.parse(args.range, text)
    kind = pick_kind(args.kind, args.path, text[selection.start : selection.end])
    ranged = args.range is not None
    server = remote.remote_settings(args)
    if not loads_model(args, kind):  # the deterministic repairs: no torch, no model stack
        why = "--no-model was given" if args.no_model else "no --model was given"
        return run(Fixer(None, why), args.path, text, selection, kind, args.json, args.write, ranged=ranged, bom=bom)
    args.model = args.model or None  # `--model` alone: the embedded model
    check_model(args)
    check_device(args)
    start_torch(args)
    if server is not None:
        from diffusion_infill.engine.remote.client import RemoteRepairer
        from diffusion_infill.engine.settings import EngineSettings

        fixer = Fixer(RemoteRepairer(remote.connect(server, EngineSettings(), args.seed)), "")
    else:
        from diffusion_infill.engine.repair.diffusion import DiffusionRepairer, RepairSettings

        loaded = load_model(args)
        problem = loaded.canvas_problem  # an instruction checkpoint or the baseline: deterministic repairs only
        fixer = Fixer(None, problem) if problem else Fixer(DiffusionRepairer(loaded, RepairSettings(seed=args.seed)))
    return run(fixer, args.path, text, selection, kind, args.json, args.write, ranged=ranged, bom=bom)
