"""clients/nvim in a real headless Neovim against the real server: drafts painted as an
extmark while they converge, replaced by the final item, accepted with <Tab>.

The embedded model is weak: at a given cursor it may answer nothing. Tests that need a
shown item try a few mid-line cursors in real code and assert the mechanics at the first
one that gets an item."""

from __future__ import annotations

import itertools
import re

import pytest
from nvim_driver import PLUGIN, Nvim, record_inline_requests, start_nvim

CODE = """import os


def read_lines(path):
    with open(path) as handle:
        return [line.rstrip() for line in handle]


def main():
    lines = read_lines(os.path.join("data", "input.txt"))
    total = sum(len(line) for line in lines)
    print(total, len(lines))
"""
# (row, col), 0-based, mid-line: the model sees code on both sides.
CURSORS = [(9, 36), (5, 26), (10, 16), (4, 19), (11, 15), (9, 12)]
_files = itertools.count()

SHOWN = "require('diffusion_infill.ghost').shown()"
OWN_NS = "vim.api.nvim_create_namespace('diffusion_infill')"
NATIVE_NS = "vim.api.nvim_create_namespace('nvim.lsp.inline_completion')"
FINAL = "(function() for _, d in ipairs(_G.drafts) do if d.draft.final then return d.draft end end end)()"


@pytest.fixture(scope="module")
def nvim(model_dir, tmp_path_factory):
    editor = start_nvim(model_dir, tmp_path_factory.mktemp("telemetry") / "t.json", native=False)
    yield editor
    editor.close()


@pytest.fixture(scope="module")
def native(model_dir, tmp_path_factory):
    editor = start_nvim(model_dir, tmp_path_factory.mktemp("telemetry") / "t.json", native=True)
    if not editor.lua("return vim.lsp.inline_completion ~= nil"):
        editor.close()
        pytest.skip("this Neovim has no vim.lsp.inline_completion (0.12+)")
    yield editor
    editor.close()


@pytest.fixture(scope="module")
def public_only(model_dir, tmp_path_factory):
    """Native mode as on a Neovim release whose inline completion internals the plugin does not
    know (0.13 and later): 0.12 with that knowledge switched off."""
    editor = start_nvim(model_dir, tmp_path_factory.mktemp("telemetry") / "t.json", native=True)
    if not editor.lua("return vim.lsp.inline_completion ~= nil"):
        editor.close()
        pytest.skip("this Neovim has no vim.lsp.inline_completion (0.12+)")
    editor.lua("require('diffusion_infill.compat').knows_completor = false")
    yield editor
    editor.close()


def open_file(nvim: Nvim, tmp_path, text: str = CODE, auto: bool = True) -> None:
    """Opens `text` as a new Python file in normal mode, with the server attached."""
    nvim.type("<Esc>")
    nvim.wait("vim.api.nvim_get_mode().mode == 'n'")
    path = tmp_path / f"sample_{next(_files)}.py"
    path.write_text(text)
    nvim.lua("require('diffusion_infill.config').options.auto_trigger = ...", auto)
    nvim.api.command(f"edit {path}")
    nvim.wait("#vim.lsp.get_clients({ bufnr = 0, name = 'diffusion_infill' }) > 0")


def insert_at(nvim: Nvim, row: int, col: int) -> None:
    """Normal mode -> insert mode at (row, col); InsertEnter starts an automatic request."""
    nvim.lua("_G.drafts = {}; vim.api.nvim_win_set_cursor(0, { ... })", row + 1, col)
    nvim.type("i")
    nvim.wait("vim.api.nvim_get_mode().mode == 'i'")


def settled(nvim: Nvim, native: bool = False):
    """Waits for the final draft and its item; returns (final draft, what is shown then)."""
    if native:
        drawn = f"#vim.api.nvim_buf_get_extmarks(0, {NATIVE_NS}, 0, -1, {{}}) > 0"
    else:
        drawn = f"({SHOWN} or {{}}).hl == 'DiffusionInfillGhost'"
    final = nvim.wait(f"{FINAL} and (({FINAL}).text == '' or {drawn}) and {FINAL}", 120)
    return final, nvim.lua(f"return {SHOWN}")


def first_item(nvim: Nvim, tmp_path, native: bool = False, text: str = CODE):
    """Tries the cursors until one gets an item; returns (row, col, final draft, shown)."""
    for row, col in CURSORS:
        open_file(nvim, tmp_path, text)
        insert_at(nvim, row, col)
        final, shown = settled(nvim, native)
        if final["text"]:
            return row, col, final, shown
    pytest.fail(f"none of {len(CURSORS)} mid-line cursors got an item")


def buffer(nvim: Nvim) -> str:
    return "\n".join(nvim.api.current.buffer[:]) + "\n"


def inserted(text: str, row: int, col: int, insertion: str) -> str:
    lines = text.split("\n")
    lines[row] = lines[row][:col] + insertion + lines[row][col:]
    return "\n".join(lines)


DRAFTS_ON = "require('diffusion_infill.config').options.drafts = true"
DRAFTS_OFF = "require('diffusion_infill.config').options.drafts = false"


def test_by_default_only_the_final_item_is_drawn_never_a_draft(nvim, tmp_path):
    """A draft the confidence gate may withdraw would be text that appears and goes without a key."""
    assert nvim.lua("return require('diffusion_infill.config').defaults.drafts") is False
    # another file end: not a context the server answered before (which would run no model)
    row, col, final, shown = first_item(nvim, tmp_path, text=CODE + "# only final items are drawn\n")
    steps = [d for d in nvim.lua("return _G.drafts") if not d["draft"]["final"] and d["draft"]["text"]]
    assert steps, "no draft before the final one"
    assert all(entry["shown"] is None for entry in steps), steps  # nothing on screen while it converged
    assert shown == {"row": row, "col": col, "text": final["text"], "hl": "DiffusionInfillGhost"}


def test_drafts_are_painted_when_asked_for_then_replaced_by_the_final_item(nvim, tmp_path):
    nvim.lua(DRAFTS_ON)
    try:
        row, col, final, shown = first_item(nvim, tmp_path)
    finally:
        nvim.lua(DRAFTS_OFF)
    steps = [d for d in nvim.lua("return _G.drafts") if not d["draft"]["final"]]
    assert steps, "no draft before the final one"
    for entry in steps:  # each draft was on screen right after it arrived
        if entry["draft"]["text"]:
            assert entry["shown"] == {
                "row": row,
                "col": col,
                "text": entry["draft"]["text"],
                "hl": "DiffusionInfillDraft",
            }
    assert shown == {"row": row, "col": col, "text": final["text"], "hl": "DiffusionInfillGhost"}
    [mark] = nvim.lua(f"return vim.api.nvim_buf_get_extmarks(0, {OWN_NS}, 0, -1, {{ details = true }})")
    assert mark[1:3] == [row, col] and mark[3]["virt_text"] == [[final["text"].split("\n")[0], "DiffusionInfillGhost"]]


def test_tab_accepts_the_shown_item(nvim, tmp_path):
    row, col, final, _ = first_item(nvim, tmp_path)
    nvim.lua(
        "_G.accepted = 0; local c = vim.lsp.get_clients({ name = 'diffusion_infill' })[1]; "
        "local exec = c.exec_cmd; c.exec_cmd = function(...) _G.accepted = _G.accepted + 1; return exec(...) end"
    )
    nvim.type("<Tab>")
    expected = inserted(CODE, row, col, final["text"])
    nvim.wait("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), '\\n') .. '\\n' == ...", 10, expected)
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)") == [row + 1, col + len(final["text"].encode())]
    assert nvim.lua("return _G.accepted") == 1  # the item's command ran (acceptance count)


def test_tab_falls_back_to_a_plain_tab_when_nothing_is_shown(nvim, tmp_path):
    open_file(nvim, tmp_path, auto=False)
    insert_at(nvim, 11, 4)
    nvim.type("<Tab>")
    nvim.wait("vim.api.nvim_get_current_line() ~= '    print(total, len(lines))'", 10)
    assert nvim.api.current.line.strip() == "print(total, len(lines))"
    assert len(nvim.api.current.line) > len("    print(total, len(lines))")
    assert nvim.lua("return #_G.drafts") == 0 and nvim.lua(f"return {SHOWN}") is None


def test_leaving_insert_mode_or_moving_clears_the_ghost_text(nvim, tmp_path):
    row, col, _, _ = first_item(nvim, tmp_path)
    nvim.type("<Esc>")
    nvim.wait(f"#vim.api.nvim_buf_get_extmarks(0, {OWN_NS}, 0, -1, {{}}) == 0", 10)
    assert nvim.lua(f"return {SHOWN}") is None
    insert_at(nvim, row, col)  # the server answers a finished result again, without drafts
    nvim.wait(f"({SHOWN} or {{}}).hl == 'DiffusionInfillGhost'")
    nvim.lua("require('diffusion_infill.config').options.auto_trigger = false")
    nvim.type("<Left>")
    nvim.wait(f"{SHOWN} == nil", 10)
    assert buffer(nvim) == CODE


FAKE_DRAFT = """
local text = ...
local client = vim.lsp.get_clients({ bufnr = 0, name = 'diffusion_infill' })[1]
local buf = vim.api.nvim_get_current_buf()
require('diffusion_infill.ghost').on_draft(nil, {
  uri = vim.uri_from_bufnr(buf), version = vim.lsp.util.buf_versions[buf], step = 1, final = false, text = text,
  position = vim.lsp.util.make_position_params(0, client.offset_encoding).position,
}, { client_id = client.id })
"""


def test_multi_line_draft_uses_virt_lines_and_is_not_repainted_when_unchanged(nvim, tmp_path):
    open_file(nvim, tmp_path, auto=False)
    insert_at(nvim, 11, 4)
    nvim.lua(
        "_G.marks = 0; local set = vim.api.nvim_buf_set_extmark; "
        "vim.api.nvim_buf_set_extmark = function(...) _G.marks = _G.marks + 1; return set(...) end"
    )
    nvim.lua(DRAFTS_ON)
    try:
        for _ in range(3):
            nvim.lua(FAKE_DRAFT, "x = 1\nfoo(x)")
        assert nvim.lua("return _G.marks") == 1
        nvim.lua(FAKE_DRAFT, "x = 2\nfoo(x)")
        assert nvim.lua("return _G.marks") == 2
    finally:
        nvim.lua(DRAFTS_OFF)
        nvim.lua("vim.api.nvim_buf_set_extmark = vim.api.nvim_buf_set_extmark")
    [mark] = nvim.lua(f"return vim.api.nvim_buf_get_extmarks(0, {OWN_NS}, 0, -1, {{ details = true }})")
    assert mark[3]["virt_text"] == [["x = 2", "DiffusionInfillDraft"]]
    assert mark[3]["virt_lines"] == [[["foo(x)", "DiffusionInfillDraft"]]]


def test_accept_word_and_accept_line(nvim, tmp_path):
    open_file(nvim, tmp_path, "\n", auto=False)
    insert_at(nvim, 0, 0)
    nvim.lua(DRAFTS_ON)
    try:
        nvim.lua(FAKE_DRAFT, "total = sum(x)\nprint(total)")
    finally:
        nvim.lua(DRAFTS_OFF)
    nvim.type("<M-Right>")
    nvim.wait("vim.api.nvim_get_current_line() == 'total'", 10)
    assert nvim.lua(f"return {SHOWN}.text") == " = sum(x)\nprint(total)"  # the rest stays shown
    nvim.type("<M-Down>")
    nvim.wait("vim.api.nvim_buf_line_count(0) == 2", 10)
    assert nvim.api.current.buffer[:] == ["total = sum(x)", ""]
    assert nvim.lua("return vim.api.nvim_win_get_cursor(0)") == [2, 0]
    assert nvim.lua(f"return {SHOWN}.text") == "print(total)"


def test_native_inline_completion_draws_the_final_item_under_the_draft_overlay(native, tmp_path):
    native.lua(DRAFTS_ON)
    try:
        row, col, final, shown = first_item(native, tmp_path, native=True)
    finally:
        native.lua(DRAFTS_OFF)
    drafts = native.lua("return _G.drafts")
    steps = [entry for entry in drafts if entry["draft"]["text"] and not entry["draft"]["final"]]
    assert any(entry["shown"] and entry["shown"]["hl"] == "DiffusionInfillDraft" for entry in steps), "no draft painted"
    assert shown is None  # the overlay is gone: the native extmark shows the final item
    [mark] = native.lua(f"return vim.api.nvim_buf_get_extmarks(0, {NATIVE_NS}, 0, -1, {{ details = true }})")
    assert mark[1:3] == [row, col] and mark[3]["virt_text"][0][0] == final["text"].split("\n")[0]
    assert mark[3]["virt_text_pos"] == "inline"  # not an overlay on the code after the cursor
    native.type("<Tab>")
    expected = inserted(CODE, row, col, final["text"])
    native.wait("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), '\\n') .. '\\n' == ...", 10, expected)


ANSWERS_DRAWN = """
local native = require('diffusion_infill.native')
local buf = vim.api.nvim_get_current_buf()
local client = vim.lsp.get_clients({ bufnr = buf, name = 'diffusion_infill' })[1]
local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
params.context = { triggerKind = 1 }
local drawn = 0
--- A real request for the cursor; returns the function that hands its answer to Neovim's handler.
local function ask()
  local answer
  native.request(buf, client, function() drawn = drawn + 1 end, function(handler)
    answer = handler
    return client:request('textDocument/inlineCompletion', params, function() end, buf)
  end)
  return answer
end
local result, ctx = { items = { { insertText = 'x' } } }, { client_id = client.id, bufnr = buf }
local hidden = ask()
native.hide(buf)
hidden(nil, result, ctx) -- an answer that crossed the cancel
ask()(nil, result, ctx)
return drawn
"""


def test_an_answer_that_comes_after_the_item_was_hidden_is_not_drawn(native, tmp_path):
    """Neovim's handler would draw it (a stale item) or, its state dropped, fail on it."""
    open_file(native, tmp_path, auto=False)
    insert_at(native, 11, 4)
    assert native.lua(ANSWERS_DRAWN) == 1  # only the answer of the request not hidden


NEOVIMS_COMPLETOR = "vim.lsp._capability.all.inline_completion.active[vim.api.nvim_get_current_buf()]"


def test_on_an_unknown_release_native_mode_uses_only_neovims_public_functions(public_only, tmp_path):
    """Neovim draws the item and <Tab> accepts it through vim.lsp.inline_completion.get(); the
    dismiss key drops it by switching inline completion off and on; its completor is not patched."""
    row, col, final, _ = first_item(public_only, tmp_path, native=True)
    assert public_only.lua(f"return rawget({NEOVIMS_COMPLETOR}, 'show') == nil")  # drawn as Neovim draws
    public_only.type("<Tab>")
    expected = inserted(CODE, row, col, final["text"])
    public_only.wait("table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), '\\n') .. '\\n' == ...", 10, expected)
    first_item(public_only, tmp_path, native=True)
    public_only.type("<C-]>")
    public_only.wait(f"#vim.api.nvim_buf_get_extmarks(0, {NATIVE_NS}, 0, -1, {{}}) == 0", 10)
    assert public_only.lua("return vim.lsp.inline_completion.get()") is False  # nothing left to accept
    assert public_only.lua("return vim.lsp.inline_completion.is_enabled({ bufnr = 0 })")


def test_the_default_mode_is_native_only_on_the_release_whose_completor_the_plugin_knows(nvim):
    modes = nvim.lua("""
        local compat, config = require('diffusion_infill.compat'), require('diffusion_infill.config')
        local options, knows = config.options, compat.knows_completor
        local modes = {}
        for _, known in ipairs({ true, false }) do
          compat.knows_completor = known
          modes[#modes + 1] = config.set({}).native
          modes[#modes + 1] = config.set({ native = true }).native
        end
        compat.knows_completor, config.options = knows, options
        return modes
    """)
    has_inline = nvim.lua("return vim.lsp.inline_completion ~= nil")
    assert modes == [has_inline, has_inline, False, has_inline]


def test_neovims_internals_and_version_checks_are_in_compat_lua_only():
    """Everything that differs between Neovim releases is in one module; init.lua only refuses
    releases before 0.10, before it loads the rest."""
    modules = {path.name: path.read_text() for path in (PLUGIN / "lua" / "diffusion_infill").glob("*.lua")}
    assert [name for name, text in modules.items() if "vim.lsp._capability" in text] == ["compat.lua"]
    checks = {name: text.count("vim.fn.has('nvim-") for name, text in modules.items()}
    assert {name: count for name, count in checks.items() if count} == {"compat.lua": 3, "init.lua": 1}
    assert "vim.fn.has('nvim-0.10') == 0" in modules["init.lua"]


def test_checkhealth_reports_command_model_and_status(nvim, tmp_path):
    open_file(nvim, tmp_path, auto=False)
    nvim.wait("require('diffusion_infill').status():match('^infill: ready')", 120)
    model = nvim.lua("return require('diffusion_infill.config').options.cmd")[-1]  # serve_command ends in --model
    nvim.api.command("checkhealth diffusion_infill")
    report = "\n".join(nvim.api.current.buffer[:])
    nvim.api.command("bwipeout")
    assert "server command: " in report and "diffusion_infill.cli.main serve " in report
    assert "--telemetry " in report and "--model " in report
    assert "model: " in report
    assert re.search(rf"server running \(.*\): ready {re.escape(model)} \(engine local\)", report), report
    assert re.search(r"pid \d+", report) and "pid ?" not in report
    assert "ERROR" not in report


STATUS = "require('diffusion_infill').status()"


def test_subcommands_switch_suggestions_and_show_status_and_log(nvim, tmp_path):
    completed = nvim.lua("return vim.fn.getcompletion('DiffusionInfill ', 'cmdline')")
    assert set(completed) == {
        "trigger",
        "dismiss",
        "start",
        "status",
        "toggle",
        "enable",
        "disable",
        "toggle_auto",
        "restart",
        "log",
    }
    open_file(nvim, tmp_path)
    nvim.wait(f"{STATUS} == 'infill: ready'", 120)
    model = nvim.lua("return require('diffusion_infill.config').options.cmd")[-1]
    nvim.api.command("DiffusionInfill status")
    assert f"infill: ready; {model} (engine local)" in nvim.lua("return vim.fn.execute('messages')")

    nvim.api.command("DiffusionInfill toggle_auto")  # this buffer asks on demand only
    assert nvim.lua(f"return {{ {STATUS}, vim.b.diffusion_infill_auto_trigger }}") == [
        "infill: ready, on demand",
        False,
    ]
    row, col = CURSORS[0]
    insert_at(nvim, row, col)
    nvim.type("<M-\\>")  # the trigger key still asks
    nvim.wait(f"{FINAL}", 120)
    nvim.type("<Esc>")
    nvim.api.command("DiffusionInfill toggle_auto")
    assert nvim.lua(f"return {STATUS}") == "infill: ready"

    for command, status in (
        ("disable", "infill: off"),
        ("enable", "infill: ready"),
        ("toggle", "infill: off"),
        ("toggle", "infill: ready"),
    ):
        nvim.api.command(f"DiffusionInfill {command}")
        assert nvim.lua(f"return {STATUS}") == status, command

    for _ in range(2):  # again while it is shown: shown anew
        nvim.api.command("DiffusionInfill log")
        log = nvim.api.current.buffer
        assert log.name == "diffusion-infill://log"
        assert any(f"ready: {model} (engine local)" in line for line in log[:]), log[:]
    nvim.api.command("close")


INFO_LINE = (
    "(function() local mark = vim.api.nvim_buf_get_extmark_by_id(0, require('diffusion_infill.ghost').ns, 2, "
    "{ details = true }); return mark[3] and { mark[1], mark[3].virt_text[1][1] } end)()"
)


def info_line(item: dict) -> str:
    """What the info line says of one item of a final draft's `items`."""
    confidence = "-" if item["confidence"] is None else f"{item['confidence']:.2f}"
    return f" {item['step']} steps · {item['ms']} ms · confidence {confidence} · {item['source']}"


def test_the_info_line_shows_steps_ms_confidence_and_source_when_asked_for(nvim, tmp_path):
    assert nvim.lua("return require('diffusion_infill.config').defaults.info") is False  # off by default
    nvim.lua("require('diffusion_infill.config').options.info = true")
    try:
        row, _, final, _ = first_item(nvim, tmp_path)
        info = nvim.wait(INFO_LINE, 10)
    finally:
        nvim.lua("require('diffusion_infill.config').options.info = false")
    assert info == [row, info_line(final["items"][0])]
    nvim.type("<Esc>")
    nvim.wait(f"not {INFO_LINE}")  # it goes with the suggestion


def test_an_action_that_cannot_be_carried_out_is_one_warning_line(nvim, tmp_path):
    open_file(nvim, tmp_path, auto=False)
    nvim.lua("_G.notes = {}; vim.notify = function(message, level) table.insert(_G.notes, { message, level }) end")
    nvim.lua("""
        local client = vim.lsp.get_clients({ bufnr = 0, name = 'diffusion_infill' })[1]
        local range = { start = { line = 0, character = 0 }, ['end'] = { line = 0, character = 9 } }
        local data = { uri = vim.uri_from_bufnr(0), version = vim.lsp.util.buf_versions[0] - 1, action = 'regenerate',
                       range = range }  -- offered for an older version: the server answers RequestFailed
        client:request('codeAction/resolve', { title = 'Regenerate selection', data = data }, function()
          _G.notes[#_G.notes + 1] = { 'the raw error reached the handler' }
        end, 0)
    """)
    [[message, level]] = nvim.wait("#_G.notes > 0 and _G.notes", 30)
    assert message.startswith("diffusion-infill: ") and "changed since" in message
    assert level == nvim.lua("return vim.log.levels.WARN")


# A last line being typed whose rest is two lines up (`for line in lines)`): the document's draft `nes)`
TYPING = "    count = sum(1 for line in li"
# the keys typed and the inline completion requests, in the order they happened
RECORD_KEYS = """
_G.events = {}
vim.api.nvim_create_autocmd('TextChangedI', { buffer = 0, callback = function() table.insert(_G.events, 'key') end })
"""


def drafted(nvim: Nvim, tmp_path, native: bool) -> None:
    """Insert mode at the end of TYPING, once its document draft `nes)` is on screen."""
    text = CODE + TYPING + "\n"
    open_file(nvim, tmp_path, text)
    nvim.wait("require('diffusion_infill').status():match('^infill: ready')", 180)
    nvim.lua("_G.drafts = {}; vim.api.nvim_win_set_cursor(0, { ..., 0 })", text.count("\n"))
    nvim.type("A")  # at the line's end
    if native:
        nvim.wait(f"#vim.api.nvim_buf_get_extmarks(0, {NATIVE_NS}, 0, -1, {{}}) > 0", 60)
    else:
        nvim.wait(f"({SHOWN} or {{}}).text == 'nes)'", 60)
    nvim.lua(RECORD_KEYS)
    record_inline_requests(nvim, "table.insert(_G.events, 'request')")


@pytest.mark.parametrize("mode", ["own", "native"])
def test_typing_the_suggestions_beginning_keeps_its_rest_without_a_request(mode, nvim, native, tmp_path):
    editor = native if mode == "native" else nvim
    drafted(editor, tmp_path, mode == "native")
    editor.type("n")
    editor.wait(f"({SHOWN} or {{}}).text == 'es)'", 10)  # kept and advanced, by the plugin in both modes
    editor.type("e")
    editor.wait(f"({SHOWN} or {{}}).text == 's)'", 10)
    assert editor.lua("return _G.events") == ["key", "key"]  # no request: the rest was on screen already
    editor.type("<Tab>")
    editor.wait("vim.api.nvim_get_current_line() == ...", 10, TYPING + "nes)")


@pytest.mark.parametrize("mode", ["own", "native"])
def test_a_key_that_leaves_the_suggestion_asks_again_at_once(mode, nvim, native, tmp_path):
    """No client timer: the request goes out while the key is handled (before a later autocmd of the same key);
    the server answers its cache and the document's drafts at once and debounces only model runs."""
    editor = native if mode == "native" else nvim
    drafted(editor, tmp_path, mode == "native")
    editor.type("x")
    editor.wait("#_G.events >= 2", 10)
    assert editor.lua("return _G.events")[:2] == ["request", "key"]


def test_cycling_asks_for_several_items_and_shows_the_next_with_its_own_info(nvim, tmp_path):
    nvim.lua("require('diffusion_infill.config').options.info = true")
    nvim.lua(
        "_G.kinds = {}; local c = vim.lsp.get_clients({ name = 'diffusion_infill' })[1]; "
        "c.request = function(self, method, params, ...) if method == 'textDocument/inlineCompletion' then "
        "table.insert(_G.kinds, params.context.triggerKind) end; "
        "return getmetatable(self).__index.request(self, method, params, ...) end"
    )
    try:
        for row, col in CURSORS:
            open_file(nvim, tmp_path, auto=False)
            insert_at(nvim, row, col)
            nvim.type("<M-]>")  # one item or none yet: an Invoked request for several
            final = nvim.wait(FINAL, 120)
            nvim.wait(f"#require('diffusion_infill.ghost').items() > 0 or ({FINAL}).text == ''", 10)
            items = nvim.lua("return require('diffusion_infill.ghost').items()")
            if len(items) > 1:  # Invoked samples are distinct: most cursors have several
                break
        else:
            pytest.fail(f"none of {len(CURSORS)} mid-line cursors got several items to cycle through")
        assert nvim.lua("return _G.kinds")[-1] == 1  # Invoked
        assert nvim.lua(f"return {SHOWN}")["text"] == final["text"]
        assert len(final["items"]) == len(items) and nvim.wait(INFO_LINE, 10)[1] == info_line(final["items"][0])
        assert info_line(final["items"][0]) != info_line(final["items"][1])  # the second sample took longer
        nvim.type("<M-]>")  # the next item, with its own info
        nvim.wait("select(2, require('diffusion_infill.ghost').items()) == 2", 10)
        assert nvim.lua(f"return {SHOWN}")["hl"] == "DiffusionInfillGhost"
        assert nvim.wait(INFO_LINE, 10)[1] == info_line(final["items"][1])
    finally:
        nvim.lua("vim.lsp.get_clients({ name = 'diffusion_infill' })[1].request = nil")
        nvim.lua("require('diffusion_infill.config').options.info = false")


def test_diagnostics_and_code_actions_come_through_neovims_lsp_client(nvim, tmp_path):
    nvim.type("<Esc>")
    nvim.wait("vim.api.nvim_get_mode().mode == 'n'")
    path = tmp_path / f"broken_{next(_files)}.json"
    path.write_text('{"name": "shapes", "sides": 4,, "closed": true\n')
    nvim.api.command(f"edit {path}")
    nvim.wait("#vim.lsp.get_clients({ bufnr = 0, name = 'diffusion_infill' }) > 0")
    assert nvim.lua(
        "return vim.lsp.get_clients({ name = 'diffusion_infill' })[1].server_capabilities.codeActionProvider ~= nil"
    ), "the server offers no code actions"
    nvim.wait(
        "#vim.diagnostic.get(0, { namespace = vim.lsp.diagnostic.get_namespace("
        "vim.lsp.get_clients({ name = 'diffusion_infill' })[1].id) }) > 0",
        30,
    )
    titles = nvim.lua("""
        local client = vim.lsp.get_clients({ name = 'diffusion_infill' })[1]
        local diagnostic = vim.diagnostic.get(0)[1]
        local params = vim.lsp.util.make_range_params(0, client.offset_encoding)
        params.range = diagnostic.user_data.lsp.range
        params.context = { diagnostics = { diagnostic.user_data.lsp } }
        local answer = vim.lsp.buf_request_sync(0, 'textDocument/codeAction', params, 60000)
        local titles = {}
        for _, response in pairs(answer or {}) do
          for _, action in ipairs(response.result or {}) do table.insert(titles, action.title) end
        end
        return titles
    """)
    assert titles, "no code action for the diagnostic"
