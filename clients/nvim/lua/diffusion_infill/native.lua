--- Native mode: final items drawn and accepted by Neovim's vim.lsp.inline_completion (0.12+),
--- through its public functions (enable, is_enabled, get) and the answers of the requests it
--- sends. Two things have no public API: asking again after an edit, and drawing an item without
--- a range where it is inserted. They use its private completor, on the release the plugin knows
--- (compat.completor); on any other release Neovim does both its own way.
local compat = require('diffusion_infill.compat')
local config = require('diffusion_infill.config')
local ghost = require('diffusion_infill.ghost')

local api = vim.api
local M = {}

M.ns = api.nvim_create_namespace('nvim.lsp.inline_completion')
local AUTOMATIC = 2 -- lsp.InlineCompletionTriggerKind

---@class diffusion_infill.Sent an inline completion request vim.lsp.inline_completion sent
---@field client vim.lsp.Client
---@field id? integer
---@field dropped? boolean hidden before its answer came: the answer is not drawn
local sent = {} ---@type table<integer, table<diffusion_infill.Sent, true>> buffer -> its pending requests

function M.enable(buf, on)
  compat.inline_completion.enable(on, { bufnr = buf })
end

--- Drops vim.lsp.inline_completion's item in `buf` and its pending requests: inline completion
--- is switched off and on again there (Neovim drops its state then), and the answers of the
--- requests are not drawn.
function M.hide(buf)
  for request in pairs(sent[buf] or {}) do
    request.dropped = true
    compat.cancel_request(request.client, request.id)
  end
  sent[buf] = nil
  local inline = compat.inline_completion
  if inline.is_enabled({ bufnr = buf }) then
    inline.enable(false, { bufnr = buf })
    inline.enable(true, { bufnr = buf })
  end
end

--- After an edit: Neovim's stale item and its pending request go, and it asks again at once (its own
--- 200 ms timer, started on CursorMovedI, goes with the completor that hiding drops): the server answers
--- from its cache or the document's draft at once and debounces only model runs. With config `debounce`
--- over 0 its timer asks instead, after that quiet. While the plugin shows the rest of an item (partly
--- accepted, or typed along: ghost.lua), Neovim asks nothing: its answer would be drawn beside that rest.
--- On a release whose completor the plugin does not know, its item stays until its next answer, as Neovim
--- has it.
function M.edited(buf)
  if ghost.visible(buf) then
    return M.hide(buf)
  elseif compat.completor(buf) then
    M.hide(buf)
    local completor = compat.completor(buf) -- a new one: hiding made it
    if completor and config.options.debounce <= 0 then
      completor:request(AUTOMATIC)
    elseif completor then
      completor:automatic_request()
    end
  end
end

--- Asks vim.lsp.inline_completion to accept its item (all of it, or a word or line of it).
--- Safe inside an <expr> mapping: the edit is scheduled.
function M.accept(buf, how)
  if how == 'all' then
    return compat.inline_completion.get({ bufnr = buf })
  end
  return compat.inline_completion.get({
    bufnr = buf,
    on_accept = function(item)
      local text = type(item.insert_text) == 'table' and item.insert_text.value or item.insert_text
      ghost.insert_part(buf, text, how, item.command)
    end,
  })
end

--- vim.lsp.inline_completion (0.12) draws an item without a range (ours: answer drops their
--- empty ranges, so it draws inline) at the cursor minus the longest common prefix of its text
--- and the code after the cursor, as if that code were part of the item, yet accepting it
--- inserts the whole text: `p` before `p()` was drawn as nothing and accepted as `pp()`. Such an
--- item is drawn whole at the cursor, as it is inserted and as the plugin's own drawing shows it;
--- other items as Neovim draws them.
local function draw_whole(show)
  return function(self, hint)
    local current, win = self.current, vim.fn.bufwinid(self.bufnr)
    if not current or current.range or type(current.insert_text) ~= 'string' or win == -1 then
      return show(self, hint)
    end
    self:hide()
    local lines = {} ---@type [string, string][][]
    for line in vim.gsplit(current.insert_text, '\n', { plain = true }) do
      lines[#lines + 1] = { { line, 'ComplHint' } }
    end
    if hint then
      table.insert(lines[#lines], { hint, 'ComplHintMore' })
    end
    local row, col = unpack(api.nvim_win_get_cursor(win))
    api.nvim_buf_set_extmark(self.bufnr, M.ns, row - 1, col, ghost.mark(self.bufnr, row - 1, col, lines))
    if not ghost.visible(self.bufnr) then -- else the plugin shows its rest (typed along), this goes at TextChangedI
      ghost.offered(self.bufnr, row - 1, col, current.insert_text, current.command)
    end
  end
end

--- Makes the completor of `buf` draw its items with draw_whole; done before each answer is drawn,
--- since a completor is made anew whenever inline completion is enabled again.
local function draws_whole(buf)
  local completor = compat.completor(buf)
  if completor and not rawget(completor, 'show') then
    completor.show = draw_whole(completor.show)
  end
end

local function empty_range(item)
  local r = item.range
  return r and r.start.line == r['end'].line and r.start.character == r['end'].character
end

--- The answer of a request sent for `buf`, before vim.lsp.inline_completion's `handler` sees it:
--- not at all when it was hidden meanwhile or the buffer left its window (Neovim would fail
--- drawing it). It draws an item with a `range` as an overlay, which would hide the code after a
--- mid-line cursor; an empty range (insert at the cursor) means the same as none, which it draws
--- inline, so items lose their empty ranges. The draft is cleared once the answer is drawn (an
--- item of the plugin's own requests stays).
local function answer(buf, request, handler)
  return function(err, result, ctx, ...)
    if sent[buf] then
      sent[buf][request] = nil
    end
    if request.dropped or vim.fn.bufwinid(buf) == -1 then
      return
    end
    for _, item in ipairs(result and (result.items or result) or {}) do
      if empty_range(item) then
        item.range = nil
      end
    end
    draws_whole(buf)
    ghost.withdrawn(buf) -- drawn again (and noted) below if the answer has an item
    local value = handler(err, result, ctx, ...)
    ghost.clear_draft(buf) -- the final item is drawn now: the draft goes without a blank frame
    return value
  end
end

--- Sends an inline completion request for `buf` through `send(handler)` (the client's own
--- request function), its answer passed through `answer`; returns what `send` returns.
function M.request(buf, client, handler, send)
  local request = { client = client } ---@type diffusion_infill.Sent
  local ok, id = send(answer(buf, request, handler))
  if ok then
    request.id = id
    sent[buf] = sent[buf] or {}
    sent[buf][request] = true
  end
  return ok, id
end

return M
