"""clients/nvim as a user sees it: Neovim's own terminal UI in tmux (256 colours, no true
colour), set up exactly as the README says (`setup({ cmd = ... })`, no settings), keys typed
through the terminal and the screen read back, on 0.12's native inline completion and on the
plugin's own drawing. Headless Neovim never draws, so only this catches what is (not) on screen.

The embedded model's own completions rarely pass its confidence gate (docs/replay.md): with
the README's settings, what a user mostly sees while typing is the document's own draft, so
tests that need a suggestion type at the end of a line that repeats one above it."""

from __future__ import annotations

import itertools
import re
import time
from pathlib import Path

import pytest
from nvim_driver import Terminal, record_inline_requests, start_terminal
from screenshot import publish, save_terminal
from test_nvim import CODE, CURSORS, FINAL

READY = "require('diffusion_infill').status():match('^infill: ready')"
RECORD_DRAFTS = """
_G.drafts = {}
vim.api.nvim_create_autocmd('User', { group = vim.api.nvim_create_augroup('record_drafts', {}),
  pattern = 'DiffusionInfillDraft', callback = function(ev)
  table.insert(_G.drafts, { draft = ev.data })
end })
"""
# each inline completion request: trigger kind, document version, line, character
RECORD_REQUEST = (
    "local at = params.position; table.insert(_G.requests,"
    " { params.context.triggerKind, vim.lsp.util.buf_versions[buf], at.line, at.character })"
)
GHOST, DRAFT = "38;5;248", "38;5;240"  # the plugin's 256-colour greys (ctermfg) as tmux writes them
_files = itertools.count()
# A last line being typed: `for line in li` is two lines up as `for line in lines)`, so the
# document draft `nes)` is offered (its estimate, 0.58, clears the embedded model's gate)
TYPING = "    count = sum(1 for line in li"
TEXT = CODE + TYPING + "\n"
DRAFTED = (TEXT.count("\n") - 1, len(TYPING))
REST = "nes)"  # the rest of the line two lines up
KEY_PAUSE = 0.05  # seconds between two keys typed as a person does: shorter than either debounce


@pytest.fixture(scope="module", params=["native", "own"])
def terminal(request, model_dir, tmp_path_factory):
    native = request.param == "native"
    workdir = tmp_path_factory.mktemp("tui")
    setup = (
        "require('diffusion_infill').setup({ cmd = cmd })"
        if native
        else "require('diffusion_infill').setup({ cmd = cmd, native = false })"
    )
    editor = start_terminal(model_dir, workdir / "t.json", workdir, setup)
    editor.workdir, editor.native = workdir, native
    if native and not editor.lua("return vim.lsp.inline_completion ~= nil"):
        editor.close()
        pytest.skip("this Neovim has no vim.lsp.inline_completion (0.12+)")
    yield editor
    editor.close()


def open_file(terminal: Terminal, text: str = TEXT) -> None:
    """Opens `text` as a new Python file, typed as `:edit`, and waits until the model is loaded."""
    name = f"sample_{next(_files)}.py"
    (terminal.workdir / name).write_text(text)
    terminal.type("Escape", f":edit {name}", "Enter")
    terminal.wait("vim.api.nvim_get_mode().mode == 'n' and vim.bo.filetype == 'python'", 30)
    terminal.wait(READY, 180)
    terminal.lua(RECORD_DRAFTS)


def insert_at(terminal: Terminal, row: int, col: int) -> None:
    """Insert mode after the character before (row, col), 0-based, as typed (`a`: also at a line's end)."""
    terminal.type(f":call cursor({row + 1}, {col})", "Enter", "a")


def line_on_screen(terminal: Terminal, row: int, colours: bool = False) -> str:
    return terminal.screen(colours).split("\n")[row]


def wait_or_none(terminal: Terminal, condition: str, timeout: float):
    try:
        return terminal.wait(condition, timeout)
    except TimeoutError:
        return None


def suggestion(terminal: Terminal) -> tuple[int, int, str, list[str]]:
    """Insert mode at the end of the line being typed, until its suggestion is drawn on screen;
    returns (row, col, its first line, the cursor's screen line (with colours) at each change
    until then)."""
    row, col = DRAFTED
    open_file(terminal)
    insert_at(terminal, row, col)
    frames, deadline = [], time.monotonic() + 120
    while not (final := terminal.lua(f"return {FINAL}")):
        frame = line_on_screen(terminal, row, colours=True)
        if not frames or frames[-1] != frame:
            frames.append(frame)
        if time.monotonic() > deadline:
            raise TimeoutError("no final draft")
        time.sleep(0.02)
    text = final["text"].split("\n")[0]
    assert text, "the README's settings offered nothing where the document has a draft"
    line = TEXT.split("\n")[row]
    shown = line[:col] + text + line[col:]
    terminal.wait_screen(lambda screen: screen.split("\n")[row].rstrip() == shown)
    return row, col, text, [*frames, line_on_screen(terminal, row, colours=True)]


def test_readme_setup_shows_ghost_text_and_no_message(terminal, tmp_path):
    row, col, text, frames = suggestion(terminal)  # a prompt on screen would have failed every RPC call
    messages = terminal.lua("return vim.fn.execute('messages')")
    assert "diffusion" not in messages and "Press ENTER" not in terminal.screen()
    coloured = line_on_screen(terminal, row, colours=True)
    assert re.search(rf"\x1b\[[0-9;]*{GHOST}m{re.escape(text[:1])}", coloured), coloured  # visibly not code
    if terminal.native and save_terminal(frames, tmp_path / "nvim.png"):
        publish(tmp_path / "nvim.png")


def test_a_runs_drafts_are_not_drawn_only_its_answer(terminal):
    """No text appears that goes without a key pressed: while the trigger key's run converges (its
    drafts streamed as infill/draft, which the gate may withdraw) the line shows the code as it
    is, or the item shown before, then the answer; never a draft (config `drafts` is off)."""
    row, col = CURSORS[0]
    open_file(terminal)
    insert_at(terminal, row, col)
    before = terminal.wait(f"{FINAL} or false", 120)  # the automatic request's answer, drawn or empty
    terminal.lua("_G.drafts = {}")
    terminal.type("M-\\")  # trigger: an Invoked run of the model
    frames = []
    while not (final := terminal.lua(f"return {FINAL}")):
        frame = line_on_screen(terminal, row, colours=True)
        if not frames or frames[-1] != frame:
            frames.append(frame)
        time.sleep(0.02)
    frames.append(line_on_screen(terminal, row, colours=True))
    drafts = [d["draft"]["text"] for d in terminal.lua("return _G.drafts") if not d["draft"]["final"]]
    assert any(drafts), "the run streamed no draft to hold back"
    line = TEXT.split("\n")[row]
    answers = [line[:col] + text.split("\n")[0] for text in (before["text"], final["text"]) if text]
    for frame in frames:
        assert not re.search(rf"\x1b\[[0-9;]*{DRAFT}m", frame), frame
        plain = re.sub(r"\x1b\[[0-9;]*m", "", frame).rstrip()
        assert plain == line or any(plain.startswith(answer) for answer in answers), (plain, drafts)


def test_drafts_asked_for_are_darker_than_the_final_suggestion(terminal):
    open_file(terminal)
    terminal.lua("require('diffusion_infill.config').options.auto_trigger = false")
    terminal.lua("require('diffusion_infill.config').options.drafts = true")
    insert_at(terminal, 11, 4)
    terminal.wait("vim.api.nvim_get_mode().mode == 'i'")
    terminal.lua("""
        local client = vim.lsp.get_clients({ bufnr = 0, name = 'diffusion_infill' })[1]
        local buf = vim.api.nvim_get_current_buf()
        require('diffusion_infill.ghost').on_draft(nil, {
          uri = vim.uri_from_bufnr(buf), version = vim.lsp.util.buf_versions[buf], step = 1, final = false,
          text = 'draft', position = vim.lsp.util.make_position_params(0, client.offset_encoding).position,
        }, { client_id = client.id })""")
    terminal.wait_screen(lambda screen: "draftprint" in screen)
    terminal.lua("require('diffusion_infill.config').options.drafts = false")
    coloured = line_on_screen(terminal, 11, colours=True)
    assert re.search(rf"\x1b\[[0-9;]*{DRAFT}m", coloured) and DRAFT != GHOST, coloured
    terminal.lua("require('diffusion_infill.config').options.auto_trigger = true")


def test_typing_drops_the_suggestion_at_once(terminal):
    row, col, text, _ = suggestion(terminal)
    typed = "#" if not text.startswith("#") else "@"
    terminal.type("-l", typed)
    line = TEXT.split("\n")[row]
    first = terminal.wait_screen(lambda screen: typed in screen.split("\n")[row]).split("\n")[row]
    assert first.rstrip() == line[:col] + typed + line[col:]  # the frame that shows the key shows nothing stale


def record_requests(terminal: Terminal) -> None:
    """_G.requests: the inline completion requests from now on (RECORD_REQUEST's fields)."""
    terminal.lua("_G.requests = {}")
    record_inline_requests(terminal, RECORD_REQUEST)


def kinds(terminal: Terminal) -> list[int]:
    """The trigger kinds of the inline completion requests since record_requests."""
    return [request[0] for request in terminal.lua("return _G.requests")]


def test_trigger_and_cycle_keys_draw_their_items(terminal):
    for row, col in CURSORS:
        open_file(terminal)
        insert_at(terminal, row, col)
        terminal.wait(f"{FINAL} or false", 120)  # the automatic request's answer, drawn or empty
        record_requests(terminal)
        terminal.lua("_G.drafts = {}")
        terminal.type("M-\\")  # trigger: Invoked, several items
        terminal.wait(f"{FINAL} or false", 120)
        items = wait_or_none(
            terminal, "#require('diffusion_infill.ghost').items() > 1 and require('diffusion_infill.ghost').items()", 10
        )
        if items:  # Invoked samples are distinct: most cursors have several
            break
    else:
        pytest.fail(f"none of {len(CURSORS)} mid-line cursors got several items to cycle through")
    assert kinds(terminal) == [1]  # Invoked

    def shown(index: int, count: str) -> str:
        text = items[index]["insertText"].split("\n")[0]
        line = TEXT.split("\n")[row]
        return line[:col] + text + count + line[col:]

    terminal.wait_screen(lambda screen: screen.split("\n")[row].rstrip() == shown(0, f" (1/{len(items)})"))
    terminal.type("M-]")  # next: the second item
    terminal.wait_screen(lambda screen: screen.split("\n")[row].rstrip() == shown(1, f" (2/{len(items)})"))


def test_tab_inserts_what_is_drawn(terminal):
    row, _, _, _ = suggestion(terminal)
    drawn = line_on_screen(terminal, row).rstrip()
    terminal.type("Tab")
    terminal.wait(f"vim.api.nvim_buf_get_lines(0, {row}, {row + 1}, true)[1] == ...", 10, drawn)


def type_slowly(terminal: Terminal, text: str) -> None:
    for key in text:
        terminal.type("-l", key)
        time.sleep(KEY_PAUSE)


def test_typing_a_line_the_file_has_from_an_empty_line_shows_its_rest(terminal):
    row = CODE.count("\n")  # the empty line after the code
    open_file(terminal, CODE + "\n")
    terminal.type(f":call cursor({row + 1}, 1)", "Enter")
    terminal.wait(f"vim.api.nvim_get_mode().mode == 'n' and vim.fn.line('.') == {row + 1}")
    record_requests(terminal)
    terminal.type("i")
    type_slowly(terminal, TYPING)
    terminal.wait_screen(lambda screen: screen.split("\n")[row].rstrip() == TYPING + REST, 10)
    coloured = line_on_screen(terminal, row, colours=True)
    assert re.search(rf"\x1b\[[0-9;]*{GHOST}m{re.escape(REST)}", coloured), coloured  # ghost text, not code
    requests = [tuple(request) for request in terminal.lua("return _G.requests")]
    assert len(requests) == len(set(requests)), requests  # no version and place asked twice
    # Automatic, on this line; the last keys may ask nothing: they type along a suggestion already shown
    assert requests[-1][0] == 2 and requests[-1][2] == row, requests


def test_accept_word_keeps_the_rest_of_the_suggestion(terminal):
    row, _, text, _ = suggestion(terminal)
    assert text == REST
    terminal.lua("require('diffusion_infill.config').options.auto_trigger = false")  # no new request: what
    try:  # stays on screen is the rest of the suggestion accepted from
        terminal.type("M-Right")
        terminal.wait("vim.api.nvim_get_current_line() == ...", 10, TYPING + "nes")
        terminal.wait_screen(lambda screen: screen.split("\n")[row].rstrip() == TYPING + REST, 10)
        assert re.search(rf"\x1b\[[0-9;]*{GHOST}m\)", line_on_screen(terminal, row, colours=True))
        terminal.type("Tab")
        terminal.wait("vim.api.nvim_get_current_line() == ...", 10, TYPING + REST)
    finally:
        terminal.lua("require('diffusion_infill.config').options.auto_trigger = true")


def test_lsp_log_has_no_error_after_a_session(terminal):
    suggestion(terminal)
    log = Path(terminal.lua("return vim.lsp.log.get_filename()"))
    assert log.is_relative_to(terminal.workdir)  # this Neovim's own log
    errors = [line for line in (log.read_text() if log.exists() else "").splitlines() if "[ERROR]" in line]
    assert not errors, "\n".join(errors[:20])


STATUSLINE = "vim.o.laststatus = 2; vim.o.statusline = \"%{v:lua.require'diffusion_infill'.status()}\""
SILENT = 2.0  # seconds of nothing shown that prove suggestions are off: a draft's answer takes well under one


def test_toggle_stops_ghost_text_while_typing_and_brings_it_back(terminal):
    row = CODE.count("\n")  # the empty line after the code
    open_file(terminal, CODE + "\n")
    terminal.lua(STATUSLINE)
    terminal.type(":DiffusionInfill toggle", "Enter")
    terminal.wait_screen(lambda screen: "infill: off" in screen, 10)
    try:
        terminal.type(f":call cursor({row + 1}, 1)", "Enter")
        terminal.wait(f"vim.api.nvim_get_mode().mode == 'n' and vim.fn.line('.') == {row + 1}")
        record_requests(terminal)
        terminal.type("i")
        type_slowly(terminal, TYPING)
        terminal.wait("vim.api.nvim_get_current_line() == ...", 10, TYPING)
        time.sleep(SILENT)  # the one fixed wait: nothing may appear in it
        assert line_on_screen(terminal, row).rstrip() == TYPING and not terminal.lua("return _G.requests")
    finally:
        terminal.type("Escape", ":DiffusionInfill toggle", "Enter")
    terminal.wait_screen(lambda screen: "infill: ready" in screen, 10)
    terminal.type("A", "BSpace")
    type_slowly(terminal, TYPING[-1])  # retyped: the same line, now with its rest
    terminal.wait_screen(lambda screen: screen.split("\n")[row].rstrip() == TYPING + REST, 10)


def test_restart_shows_the_status_going_from_loading_to_ready(terminal):
    open_file(terminal)
    terminal.lua(STATUSLINE)
    terminal.lua("""
        _G.statuses = {}
        vim.api.nvim_create_autocmd('User', { pattern = 'DiffusionInfillStatus', callback = function()
          local status = require('diffusion_infill').status()
          if _G.statuses[#_G.statuses] ~= status then table.insert(_G.statuses, status) end
        end })""")
    terminal.type(":DiffusionInfill restart", "Enter")
    terminal.wait("_G.statuses[#_G.statuses] == 'infill: ready'", 180)
    assert terminal.lua("return _G.statuses") == ["infill: starting", "infill: loading", "infill: ready"]
    terminal.wait_screen(lambda screen: "infill: ready" in screen, 10)  # on the statusline


# 18,000 characters of a list, then a call the model completes: well past ghost.LONG_LINE bytes.
LONG_LINE = "values = [" + "1, " * 6_000 + "0]; total = sum(values)"


def test_ghost_text_on_a_very_long_line_is_drawn_over_it_where_inline_text_would_be(terminal):
    """Neovim lays out a line that holds inline virtual text by measuring every character before it
    at each redraw (in a 3 MB line, 2 s a key while the ghost text was there): past ghost.LONG_LINE
    bytes the ghost text is an overlay that starts at the cursor, as the inline text would."""
    open_file(terminal, LONG_LINE + "\n")
    terminal.type(":normal! $", "Enter", "i")  # before the closing parenthesis
    terminal.wait("vim.api.nvim_get_mode().mode == 'i'", 10)
    terminal.type("M-\\")  # trigger: the plugin draws what comes, drafts and items, in both modes
    shown = terminal.wait("require('diffusion_infill.ghost').shown()", 120)
    details = terminal.lua(
        "local ghost = require('diffusion_infill.ghost')"
        " return vim.api.nvim_buf_get_extmarks(0, ghost.ns, 0, -1, { details = true })[1][4]"
    )
    assert details["virt_text_pos"] == "overlay"
    # the ghost text (and which item of how many), then the closing parenthesis it moves right, from the cursor on
    row, column = terminal.lua("return { vim.fn.screenrow(), vim.fn.screencol() }")
    first = shown["text"].split("\n")[0]
    width = terminal.lua("return vim.api.nvim_win_get_width(0)") - column + 1
    expected = (first + (shown.get("hint") or "") + ")")[:width]
    terminal.wait_screen(
        lambda screen: screen.split("\n")[row - 1][column - 1 :].rstrip().startswith(expected.rstrip())
    )
