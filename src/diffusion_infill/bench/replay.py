"""`diffusion-infill bench --replay`: held-out code typed again through the real server, as
a user in Neovim would type it, counting how often the grey text was right.

What a user feels is whether the suggestion shown is the text they were about to type,
not edit similarity. So each held-out excerpt (files no model here was trained on: the
held-out 5% of the stdlib and third-party packages, see diffusion_infill.bench.cases) is typed into the
real `diffusion-infill serve` process over stdio, one character at a time, each an
incremental `didChange`; the document starts as the file up to the excerpt, the cursor
stays at its end.

The client asks as the Neovim client (clients/nvim) does by default: at once, with no timer
of its own (the server waits its debounce, RequestPolicy.debounce_s, before a model run
only). The typist asks where they pause: at a word's end, before a newline, and after a new
line's indentation; each pause lasts `PAUSE_MS`, and an answer that has not come `PAUSE_MS`
after the request (sent at the key that began the pause) is too late: the next keystroke
cancels it (`$/cancelRequest`, as the editor does) and it is never shown. The requests the
clients also send at the keys inside a word are not sent: the next key comes before the
server's debounce ends, so they start no run, though one the server answers without a run
(a document draft, its cache) would show there; the replay does not count those. Idle time
is skipped (the next keystroke follows an answer at once), since nothing happens in it: the
outcomes are those of the real pace.

A shown suggestion (the answer's first item) is accepted when the characters the user
types next begin with it; otherwise by accept-line (its first line, when it has several)
or accept-word (Neovim's `<M-Right>`: leading spaces and one word or run of punctuation)
when those match. Accepting inserts the text (with the item's command, as the client
runs it) and typing goes on after it: accepted characters are typing saved. A shown
suggestion not accepted whole is wrong.

Per model: `requests`, `shown`, `accepted` (whole), `acceptance_rate` (accepted / shown),
`chars_saved_per_100` (characters inserted by any accept, per 100 characters of the
excerpts), `wrong_shown_per_100`, `latency_ms_p50` and `_p95` (answers that came in
time), `cpu_ms_per_100` (the server process's CPU time, all threads, per 100 characters
of the excerpts), `answered_without_model` (the final `infill/draft` of the request's
version says step 0: no denoising step ran), `answered_without_run` (no final `infill/draft`
at all: the server ran nothing, diffusion_infill.lsp.completion.without_run), `shown_by_source` and
`accepted_by_source` (the suggestions shown, and those accepted whole, by where the final
`infill/draft` says they came from: the model's run, the document's draft, or the rest of a
shown suggestion typed along; diffusion_infill.engine.requests.SOURCES), `flashed_drafts` (drafts the client
painted that the answer then withdrew: text that appeared and went without a key pressed; the editors
paint no draft by default, `--show-drafts` paints each as they do when asked to), and more. Both the
diffusion engine and the autoregressive baseline run through the same server, one after the other, on
one thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffusion_infill.bench.cases import third_party_files
from diffusion_infill.bench.lsp_latency import end_position, start_server
from diffusion_infill.bench.metrics import percentile
from diffusion_infill.bench.typing_burst import cpu_seconds
from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.requests import MODEL, SOURCES, InfillRequest
from diffusion_infill.engine.training.corpus import Document, stdlib_files
from diffusion_infill.lsp.text.window import bounded

PAUSE_MS = 400  # a typist's pause at a word or line end, during which an answer can be shown (--pause-ms)
REPLAY_SEED = 20261203  # which files are reported; tuning files (diffusion_infill.bench.calibrate) come from the rest
TUNING_OFFSET = 100  # tuning files are the shuffled pool's files from this index on
FULL_FILES, FULL_CHARS = 8, 600
QUICK_FILES, QUICK_CHARS = 2, 300
MAX_FILE_CHARS = 60_000
LOAD_S = 600.0  # waiting for the model to load
WORD_CHAR = re.compile(r"\w")
COUNTS = (
    "requests",
    "shown",
    "accepted",
    "accepted_line",
    "accepted_word",
    "late",
    "errors",
    "answered_without_model",
    "answered_without_run",
    "flashed_drafts",
)


@dataclass(frozen=True)
class Excerpt:
    name: str  # file:first line-last line (1-based)
    context: str  # the file before the excerpt: the document when typing starts
    text: str  # what is typed


def _pool() -> list[Document]:
    """Held-out files, stdlib and third-party in turn, shuffled once with REPLAY_SEED."""
    rng = random.Random(REPLAY_SEED)
    stdlib = [doc for doc in stdlib_files(held_out=True) if _fits(doc)]
    third = [doc for doc in third_party_files() if _fits(doc)]
    rng.shuffle(stdlib)
    rng.shuffle(third)
    mixed = [doc for pair in zip(stdlib, third, strict=False) for doc in pair]
    return mixed + stdlib[len(mixed) // 2 :] + third[len(mixed) // 2 :]


def excerpt(doc: Document, chars: int, rng: random.Random) -> Excerpt | None:
    """About `chars` characters of whole lines from the second half of `doc` (so the model has
    context before them), starting at a line of code; None when the file has no such place."""
    lines = doc.text.splitlines(keepends=True)
    starts = [
        i
        for i in range(len(lines) // 3, len(lines) - 5)
        if lines[i].strip() and not lines[i].lstrip().startswith(("#", '"', "'", "@"))
    ]
    if not starts:
        return None
    first = rng.choice(starts)
    last, typed = first, ""
    while last < len(lines) and len(typed) < chars:
        typed += lines[last]
        last += 1
    typed = typed.rstrip("\n")
    if len(typed) < chars // 2:
        return None
    return Excerpt(f"{doc.name}:{first + 1}-{last}", "".join(lines[:first]), typed)


def _fits(doc: Document) -> bool:
    """A file worth typing into: long enough to have context, short enough to load, LF line ends."""
    return doc.text.count("\n") > 60 and len(doc.text) < MAX_FILE_CHARS and "\r" not in doc.text


def python_files(paths: list[Path]) -> list[Document]:
    """The Python files at `paths` (files, or folders searched recursively) that fit, in a fixed order."""
    found = []
    for path in paths:
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            try:
                doc = Document(str(file), "python", file.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
            if _fits(doc):
                found.append(doc)
    return found


def excerpts(files: int, chars: int, tuning: bool = False, paths: list[Path] | None = None) -> list[Excerpt]:
    """The reported excerpts (or, with `tuning`, excerpts from other files, for calibration; with
    `paths`, excerpts of the Python files there, shuffled with the same seed)."""
    if paths:
        pool = python_files(paths)
        random.Random(REPLAY_SEED).shuffle(pool)
    else:
        pool = _pool()
        pool = pool[TUNING_OFFSET:] if tuning else pool[:TUNING_OFFSET]
    rng = random.Random(REPLAY_SEED + tuning)
    chosen = []
    for doc in pool:
        if len(chosen) == files:
            break
        if (found := excerpt(doc, chars, rng)) is not None:
            chosen.append(found)
    return chosen


def pauses(text: str, at: int) -> bool:
    """Whether the typist pauses (past the server's debounce) with the cursor after text[:at], before text[at]:
    at a word's end, before a newline, or after a line's indentation."""
    if at == 0 or at >= len(text):
        return False
    before, after = text[at - 1], text[at]
    if after == "\n":
        return True
    if WORD_CHAR.match(before) and not WORD_CHAR.match(after):
        return True
    line = text[:at].rsplit("\n", 1)[-1]
    return not line.strip() and not after.isspace()


def asked(pieces: list[Excerpt]) -> Iterator[tuple[InfillRequest, str]]:
    """Each place the replay asks in `pieces`, as a request on the true text so far (bounded as the
    server's window), with the text the file goes on with there."""
    for piece in pieces:
        full = piece.context + piece.text
        for where in range(len(piece.context), len(full)):
            if pauses(full, where):
                yield InfillRequest(*bounded(full[:where], ""), "python"), full[where:]


def accept_part(suggestion: str, how: str) -> str:
    """What accept-word / accept-line take of `suggestion` (clients/nvim ghost.lua `part`)."""
    if how == "line":
        match = re.match(r"\n?[^\n]*\n?", suggestion)
    else:
        match = re.match(r"\s*\w+", suggestion) or re.match(r"\s*[^\w\s]+", suggestion)
    return match.group() if match else suggestion


def accepted_as(suggestion: str, upcoming: str) -> tuple[str, str] | None:
    """How a user who knows what they will type takes `suggestion`: ("all"|"line"|"word", text), or None."""
    if upcoming.startswith(suggestion):
        return "all", suggestion
    for how in ("line", "word"):
        part = accept_part(suggestion, how)
        if part and len(part) < len(suggestion) and upcoming.startswith(part):
            return how, part
    return None


@dataclass
class Tally:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))
    chars_saved: int = 0
    chars_saved_whole: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    cpu_s: float = 0.0
    log: list[dict] = field(default_factory=list)  # every request: where, what was shown, what became of it
    shown_by_source: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))
    accepted_by_source: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SOURCES, 0))


class Typist:
    """One server process, and a user typing excerpts into it."""

    def __init__(
        self,
        client: LanguageClient,
        finals: dict[tuple[str, int], dict],
        tally: Tally,
        drafts: dict[tuple[str, int], list[str]],
        pause_ms: int = PAUSE_MS,
        show_drafts: bool = False,
    ):
        self.client, self.finals, self.tally = client, finals, tally
        # The client asks at once, at the key that begins the pause: the answer has the whole pause.
        self.budget_s = pause_ms / 1000
        self.drafts, self.show_drafts = drafts, show_drafts  # the non-final drafts of each (uri, version)
        self.documents = 0

    def _flashed(self, uri: str, version: int, shown: str) -> int:
        """The drafts the client painted for this request (only with `show_drafts`, as the editors' own
        drafts setting) that the answer, shown at once, does not go on from: withdrawn without a key."""
        painted = {text for text in self.drafts.pop((uri, version), []) if text}
        return sum(not shown.startswith(text) for text in painted) if self.show_drafts else 0

    def _change(self, uri: str, version: int, text: str, at: types.Position) -> None:
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [types.TextDocumentContentChangePartial(range=types.Range(at, at), text=text)],
            )
        )

    async def ask(self, uri: str, document: str, budget_s: float) -> tuple[list, float] | None:
        """An Automatic request at the end of `document`: (items, latency ms), or None when the
        answer would come after the next keystroke (the request is then cancelled)."""
        params = types.InlineCompletionParams(
            context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
            text_document=types.TextDocumentIdentifier(uri),
            position=end_position(document),
        )
        message_id = str(uuid.uuid4())
        sent = time.perf_counter()
        future = self.client.protocol.send_request_async(types.TEXT_DOCUMENT_INLINE_COMPLETION, params, message_id)
        try:
            answer = await asyncio.wait_for(asyncio.shield(future), budget_s)
        except asyncio.TimeoutError:
            self.client.protocol.notify("$/cancelRequest", types.CancelParams(id=message_id))
            future.add_done_callback(lambda done: done.exception())  # its error answer is expected, not news
            return None
        latency_ms = (time.perf_counter() - sent) * 1000
        items = answer.items if isinstance(answer, types.InlineCompletionList) else (answer or [])
        return list(items), latency_ms

    async def type_excerpt(self, piece: Excerpt) -> None:
        self.documents += 1
        uri = f"file:///replay/{self.documents}/{piece.name.rsplit(':', 1)[0].replace('/', '_')}"
        document, version = piece.context, 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, document))
        )
        full, at = piece.context + piece.text, 0
        while at < len(piece.text):
            if pauses(full, len(piece.context) + at):
                taken = await self._suggestion(uri, document, version, piece.text[at:])
                self.tally.log[-1].update(excerpt=piece.name, at=at)
                if taken:
                    version += 1
                    self._change(uri, version, taken, end_position(document))
                    document, at = document + taken, at + len(taken)
                    continue
            version += 1
            self._change(uri, version, piece.text[at], end_position(document))
            document, at = document + piece.text[at], at + 1
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))

    async def _suggestion(self, uri: str, document: str, version: int, upcoming: str) -> str:
        """Asks at the cursor; returns the text the user accepts ('' when none)."""
        counts = self.tally.counts
        counts["requests"] += 1
        entry = {"before": document[-1:], "outcome": "none", "shown": ""}
        self.tally.log.append(entry)
        try:
            asked = await self.ask(uri, document, self.budget_s)
        except Exception:  # a JSON-RPC error answer: counted, the replay goes on
            counts["errors"] += 1
            entry["outcome"] = "error"
            return ""
        if asked is None:  # its drafts went because the user typed on
            self.drafts.pop((uri, version), None)
            counts["late"] += 1
            entry["outcome"] = "late"
            return ""
        items, latency_ms = asked
        self.tally.latencies_ms.append(latency_ms)
        final = self.finals.get((uri, version))
        entry.update(latency_ms=round(latency_ms, 1), step=final and final.get("step"))
        if final is not None and final.get("step") == 0:
            counts["answered_without_model"] += 1
        if final is None:  # not even a final draft: the server ran nothing (lsp.completion.without_run)
            counts["answered_without_run"] += 1
        shown = _insert_text(items[0]) if items else ""
        counts["flashed_drafts"] += self._flashed(uri, version, shown)
        if not shown:
            return ""
        source = final.get("source", MODEL) if final is not None else MODEL
        counts["shown"] += 1
        self.tally.shown_by_source[source] += 1
        entry.update(shown=shown, outcome="wrong", source=source)
        taken = accepted_as(shown, upcoming)
        if taken is None:
            return ""
        how, text = taken
        entry["outcome"] = how
        counts["accepted" if how == "all" else f"accepted_{how}"] += 1
        if how == "all":
            self.tally.accepted_by_source[source] += 1
        self.tally.chars_saved += len(text)
        if how == "all":
            self.tally.chars_saved_whole += len(text)
            command = items[0].command
            if command is not None:
                await self.client.workspace_execute_command_async(
                    types.ExecuteCommandParams(command=command.command, arguments=command.arguments)
                )
        return text


def _insert_text(item: types.InlineCompletionItem) -> str:
    text = item.insert_text
    return text if isinstance(text, str) else text.value


async def _warm_up(client: LanguageClient) -> None:
    """One request on a scratch document: the model loads before anything is measured."""
    uri = "file:///replay/warm-up.py"
    text = "def area(width, height):\n    return "
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text)))
    params = types.InlineCompletionParams(
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        text_document=types.TextDocumentIdentifier(uri),
        position=end_position(text),
    )
    await asyncio.wait_for(client.text_document_inline_completion_async(params), LOAD_S)
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))


async def replay_model(
    model: Path, pieces: list[Excerpt], settings: dict, seed: int, pause_ms: int, show_drafts: bool = False
) -> Tally:
    """Types every excerpt through one fresh server serving `model`."""
    client = LanguageClient("replay-bench", "1")
    finals: dict[tuple[str, int], dict] = {}
    drafts: dict[tuple[str, int], list[str]] = {}

    def on_draft(ls, params) -> None:
        if params.final:
            finals[(params.uri, params.version)] = {"step": params.step, "source": getattr(params, "source", MODEL)}
        else:
            drafts.setdefault((params.uri, params.version), []).append(params.text)

    client.feature("infill/draft")(on_draft)
    tally = Tally()
    with tempfile.TemporaryDirectory() as state:
        # One torch thread and no OpenMP pool beside it: the numbers are per core.
        await start_server(
            client,
            model,
            Path(state) / "acceptance.json",
            {"diffusionInfill": settings},
            "--threads",
            "1",
            "--seed",
            str(seed),
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        process = client._server  # pygls keeps the process private: its pid, for /proc
        assert process is not None
        try:
            await _warm_up(client)
            typist = Typist(client, finals, tally, drafts, pause_ms, show_drafts)
            before = cpu_seconds(process.pid)
            for piece in pieces:
                await typist.type_excerpt(piece)
            tally.cpu_s = cpu_seconds(process.pid) - before
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
    return tally


def _calibrated_threshold(model: Path) -> float | None:
    """The minConfidence the server uses by default for `model`; None: it has no calibration."""
    calibration = Calibration.load(model)
    return calibration.threshold if calibration else None


def summarize(tally: Tally, characters: int) -> dict:
    counts, per_100 = tally.counts, 100 / max(characters, 1)
    latencies = tally.latencies_ms or [0.0]
    return {
        **{key: counts[key] for key in COUNTS[:3]},  # requests, shown, accepted
        "acceptance_rate": round(counts["accepted"] / counts["shown"], 3) if counts["shown"] else None,
        "chars_saved_per_100": round(tally.chars_saved * per_100, 2),
        "wrong_shown_per_100": round((counts["shown"] - counts["accepted"]) * per_100, 2),
        "latency_ms_p50": round(percentile(latencies, 0.5), 1),
        "latency_ms_p95": round(percentile(latencies, 0.95), 1),
        "cpu_ms_per_100": round(tally.cpu_s * 1000 * per_100, 1),
        "chars_saved_whole_per_100": round(tally.chars_saved_whole * per_100, 2),
        **{key: counts[key] for key in COUNTS[3:]},
        "latency_ms_mean": round(statistics.fmean(latencies), 1),
        "shown_by_source": dict(tally.shown_by_source),
        "accepted_by_source": dict(tally.accepted_by_source),
    }


def run(
    quick: bool,
    files: int | None,
    chars: int | None,
    model: Path | None,
    baseline: Path,
    seed: int,
    settings: dict | None = None,
    pause_ms: int = PAUSE_MS,
    tuning: bool = False,
    log: Path | None = None,
    paths: list[Path] | None = None,
    show_drafts: bool = False,
) -> dict:
    """Both models on the same excerpts (the tuning files' with `tuning`, the files at `paths`
    with those); `model` None: a copy of the embedded model. `log`: every request and its
    outcome, a JSON object a line. `show_drafts`: the client paints every draft."""
    from diffusion_infill.bench.lsp_latency import embedded_model_copy

    pieces = excerpts(
        files or (QUICK_FILES if quick else FULL_FILES), chars or (QUICK_CHARS if quick else FULL_CHARS), tuning, paths
    )
    characters = sum(len(piece.text) for piece in pieces)
    settings = settings or {}
    report: dict = {}
    with tempfile.TemporaryDirectory() as scratch:
        served = {"diffusion": model or embedded_model_copy(Path(scratch)), "autoregressive": baseline}
        for family, path in served.items():
            tally = asyncio.run(replay_model(path, pieces, settings, seed, pause_ms, show_drafts))
            if log is not None:
                with log.open("a") as out:
                    out.writelines(json.dumps({"model": family, **entry}) + "\n" for entry in tally.log)
            report[family] = {
                **summarize(tally, characters),
                "pause_ms": pause_ms,
                "show_drafts": show_drafts,
                "min_confidence": settings.get("minConfidence", _calibrated_threshold(path)),
                "model": str(model or "embedded") if family == "diffusion" else str(path),
            }
    return {**report, "files": [piece.name for piece in pieces], "characters": characters}


def table(report: dict) -> str:
    keys = (
        "requests",
        "shown",
        "accepted",
        "acceptance_rate",
        "chars_saved_per_100",
        "wrong_shown_per_100",
        "latency_ms_p50",
        "latency_ms_p95",
        "cpu_ms_per_100",
        "answered_without_model",
        "answered_without_run",
        "flashed_drafts",
        "accepted_word",
        "accepted_line",
        "late",
    )
    lines = ["| | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for family in ("diffusion", "autoregressive"):
        lines.append(f"| {family} | " + " | ".join(str(report[family][key]) for key in keys) + " |")
    lines.append(f"\n{len(report['files'])} excerpts, {report['characters']} characters: " + ", ".join(report["files"]))
    return "\n".join(lines) + "\n"


def _bad_arguments(args) -> str | None:
    if args.files is not None and args.files < 1:
        return "--files must be at least 1"
    if args.chars is not None and args.chars < 20:
        return "--chars must be at least 20"
    if args.min_confidence is not None and not 0 <= args.min_confidence <= 1:
        return "--min-confidence must be from 0 to 1"
    for path in args.paths or []:
        if not path.exists():
            return f"--paths: {path} does not exist"
    if args.paths and not python_files(args.paths):
        return f"--paths: no Python file of more than 60 lines and under {MAX_FILE_CHARS:,} characters there"
    if args.settings is not None and not isinstance(_json_or_none(args.settings), dict):
        return '--settings must be a JSON object, e.g. \'{"mode": "single-line"}\''
    return None


def _json_or_none(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return None


def main(args) -> int:
    logging.getLogger("pygls").setLevel(logging.WARNING)  # the client would log every message on stderr
    problem = _bad_arguments(args)
    if problem:
        print(f"diffusion-infill: {problem}", file=sys.stderr)
        return 2
    settings = json.loads(args.settings) if args.settings is not None else {}
    if args.min_confidence is not None:
        settings["minConfidence"] = args.min_confidence
    if args.log is not None:
        args.log.write_text("")
    report = run(
        args.quick,
        args.files,
        args.chars,
        args.model,
        args.baseline,
        args.seed,
        settings,
        args.pause_ms,
        args.tuning,
        args.log,
        args.paths,
        args.show_drafts,
    )
    if args.json:
        print(json.dumps(report))
    else:
        print(table(report), file=sys.stdout)
    return 0
