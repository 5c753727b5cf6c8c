--- Ghost text: one namespace, one reused extmark per buffer. Only final items are shown unless
--- config `drafts` asks for every converging draft (`infill/draft`, which the confidence gate may
--- then withdraw: text that appears and goes without a key pressed); a request or draft is drawn
--- only if the buffer, its changedtick and the cursor are still those it was made for.
local compat = require('diffusion_infill.compat')
local config = require('diffusion_infill.config')

local api = vim.api
local M = {}

M.ns = api.nvim_create_namespace('diffusion_infill')
M.client_name = 'diffusion_infill'
local MARK, INFO = 1, 2 -- the extmark ids (the suggestion, its info line), reused in every buffer
local AUTOMATIC, INVOKED = 2, 1 -- lsp.InlineCompletionTriggerKind

---@class diffusion_infill.State
---@field shown? {row: integer, col: integer, text: string, hl: string, hint?: string} what the extmark shows
---@field items lsp.InlineCompletionItem[] final items of the last request
---@field index integer the item shown
---@field counted? boolean the user cycled: the item is shown with its number, even one of one
---@field kept? {tick: integer, cursor: integer[]} the buffer right after a partial accept, which
---  left the rest of the item shown: that edit is not a change to answer
---@field request? {id: integer, client: vim.lsp.Client, tick: integer, cursor: integer[]}
---@field timer? uv.uv_timer_t
---@field at? integer[] the cursor when the text or cursor last changed
---@field info? table the final draft whose info line is shown (its `items`: each item's own)
---@field converted? {tick: integer, cols: table<string, integer>} byte columns of LSP positions in this version
---@field offer? {row: integer, col: integer, text: string, length: integer, command?: lsp.Command} the final
---  item on screen (the plugin's or vim.lsp.inline_completion's) where it was drawn, and its line's length then
local states = {} ---@type table<integer, diffusion_infill.State>

local function state(buf)
  states[buf] = states[buf] or { items = {}, index = 1 }
  return states[buf]
end

function M.client(buf)
  return vim.lsp.get_clients({ bufnr = buf, name = M.client_name })[1]
end

--- Bytes in line `row` of `buf`, without reading the line.
local function line_length(buf, row)
  local length = api.nvim_buf_get_offset(buf, row + 1) - api.nvim_buf_get_offset(buf, row)
  if row + 1 < api.nvim_buf_line_count(buf) then
    return length - 1
  end
  local bo = vim.bo[buf] -- the last line's EOL is counted where it would be written
  return (bo.eol or (bo.fixeol and not bo.binary)) and length - 1 or length
end

--- Byte column of an LSP position on `row` of `buf`, computed once per buffer version and position
--- (every draft of a run names the same one), from only the part of the line it needs: in a 3 MB
--- line a draft does not copy the line.
local function byte_col(buf, row, character, encoding)
  local st, tick = state(buf), api.nvim_buf_get_changedtick(buf)
  if not (st.converted and st.converted.tick == tick) then
    st.converted = { tick = tick, cols = {} }
  end
  local key = table.concat({ row, character, encoding }, ':')
  if st.converted.cols[key] then
    return st.converted.cols[key]
  elseif row >= api.nvim_buf_line_count(buf) then
    return 0 -- no such line: an empty one's column
  end
  local length = line_length(buf, row)
  -- a UTF-16 or UTF-32 unit is at most 4 bytes; one more character's worth so none is cut
  local part = encoding == 'utf-8' and character or 4 * character + 4
  local line = api.nvim_buf_get_text(buf, row, 0, row, math.max(0, math.min(part, length)), {})[1] or ''
  local col
  if encoding == 'utf-8' then
    col = math.min(character, #line)
  else
    local ok, found = pcall(compat.str_byteindex, line, encoding, character)
    col = ok and found or #line
  end
  st.converted.cols[key] = col
  return col
end

local function cursor()
  local pos = api.nvim_win_get_cursor(0)
  return { pos[1] - 1, pos[2] }
end

local function in_insert()
  return api.nvim_get_mode().mode:sub(1, 1) == 'i'
end

--- True when `buf` is the current buffer in insert mode, unchanged since `tick`, cursor at `pos`.
local function fresh(buf, tick, pos)
  if api.nvim_get_current_buf() ~= buf or not in_insert() then
    return false
  end
  local now = cursor()
  return api.nvim_buf_get_changedtick(buf) == tick and now[1] == pos[1] and now[2] == pos[2]
end

--- Bytes of a line from which ghost text is an overlay, not inline virtual text: Neovim lays out a
--- line that holds inline virtual text by measuring every character before it, at every redraw, so
--- in a 3 MB line each key took 2 s while the mark was there (0.4 s without it, or with an overlay).
M.LONG_LINE = 10000

--- Extmark options that draw `lines` (chunks of ghost text per line) at (row, col). Inline, so the
--- text after the cursor moves right as it will when accepted; on a line over LONG_LINE bytes an
--- overlay, which covers the rest of the cursor's screen row with the ghost text followed by the
--- text it moves right (a wrapped line's later rows show that text where it stands now).
function M.mark(buf, row, col, lines)
  local opts = { virt_text = lines[1], virt_lines = #lines > 1 and { unpack(lines, 2) } or nil, hl_mode = 'combine' }
  local length = line_length(buf, row)
  if length <= M.LONG_LINE then
    opts.virt_text_pos = 'inline'
    return opts
  end
  opts.virt_text_pos = 'overlay'
  if col < length then
    local width = api.nvim_win_get_width(0)
    local after = api.nvim_buf_get_text(buf, row, col, row, math.min(col + 4 * width, length), {})[1] or ''
    opts.virt_text = vim.list_extend(vim.deepcopy(lines[1]), { { vim.fn.strcharpart(after, 0, width), 'Normal' } })
  end
  return opts
end

--- Paints `text` at (row, col), and `hint` (which item of how many) after its last line; a repaint
--- of the same text is skipped (no flicker).
local function show(buf, row, col, text, hl, hint)
  local st = state(buf)
  local s = st.shown
  if s and s.row == row and s.col == col and s.text == text and s.hl == hl and s.hint == hint then
    return
  end
  if text == '' then
    return M.clear(buf)
  end
  local lines = {} ---@type [string, string][][]
  for line in vim.gsplit(text, '\n', { plain = true }) do
    lines[#lines + 1] = { { line, hl } }
  end
  if hint then
    table.insert(lines[#lines], { hint, 'DiffusionInfillCount' })
  end
  local opts = M.mark(buf, row, col, lines)
  opts.id = MARK
  api.nvim_buf_set_extmark(buf, M.ns, row, col, opts)
  st.shown = { row = row, col = col, text = text, hl = hl, hint = hint }
end

function M.clear(buf)
  local st = states[buf]
  if st and st.shown then
    pcall(api.nvim_buf_del_extmark, buf, M.ns, MARK)
    st.shown = nil
  end
end

--- Clears a draft, but not a final item (of the plugin's own request).
function M.clear_draft(buf)
  local st = states[buf]
  if st and st.shown and st.shown.hl == 'DiffusionInfillDraft' then
    M.clear(buf)
  end
end

function M.visible(buf)
  local st = states[buf or api.nvim_get_current_buf()]
  return st ~= nil and st.shown ~= nil
end

--- The final items of the last request in `buf` and the index of the one shown.
function M.items(buf)
  local st = states[buf or api.nvim_get_current_buf()]
  return st and vim.deepcopy(st.items) or {}, st and st.index or 1
end

--- What the extmark shows now: {row, col, text, hl} or nil (for tests and :checkhealth).
function M.shown(buf)
  local st = states[buf or api.nvim_get_current_buf()]
  return st and st.shown and vim.deepcopy(st.shown) or nil
end

local function cancel(buf)
  local st = states[buf]
  if not st then
    return
  end
  if st.timer then
    st.timer:stop()
    st.timer:close()
    st.timer = nil
  end
  local req = st.request
  if req then
    st.request = nil
    compat.cancel_request(req.client, req.id)
  end
end

--- Forgets everything shown or pending in `buf` (cursor moved, text changed, insert left).
function M.reset(buf)
  cancel(buf)
  M.clear(buf)
  local st = states[buf]
  if st then
    st.items, st.index, st.counted, st.kept, st.offer = {}, 1, nil, nil, nil
  end
  if st and st.info then
    pcall(api.nvim_buf_del_extmark, buf, M.ns, INFO)
    st.info = nil
  end
end

--- The text an item adds at the cursor: its insertText without the text it replaces that is
--- already in the buffer (typed before the cursor, or closers after it).
local function display(buf, item, encoding)
  local text = item.insertText
  text = type(text) == 'table' and text.value or text or ''
  local range = item.range
  if not range then
    return text
  end
  local row, col = unpack(cursor())
  local s_row, e_row = range.start.line, range['end'].line
  if s_row ~= row or e_row ~= row then
    return text
  end
  local s_col = byte_col(buf, row, range.start.character, encoding)
  local e_col = byte_col(buf, row, range['end'].character, encoding)
  local function between(from, to) -- the line's bytes from..to (0-based, end exclusive), not the whole line
    return from < to and api.nvim_buf_get_text(buf, row, from, row, to, {})[1] or ''
  end
  local typed, replaced = between(s_col, col), between(col, e_col)
  if text:sub(1, #typed) == typed then
    text = text:sub(#typed + 1)
  end
  if #replaced > 0 and text:sub(-#replaced) == replaced then
    text = text:sub(1, -#replaced - 1)
  end
  return text
end

local function show_item(buf)
  local st = state(buf)
  local item = st.items[st.index]
  local client = M.client(buf)
  if not item or not client then
    return M.clear(buf)
  end
  local row, col = unpack(cursor())
  local hint = (st.counted or #st.items > 1) and (' (%d/%d)'):format(st.index, #st.items) or nil
  local text = display(buf, item, client.offset_encoding)
  show(buf, row, col, text, 'DiffusionInfillGhost', hint)
  M.offered(buf, row, col, text, item.command)
end

--- Notes the final item drawn at (row, col) (its text as shown, without what the line already holds), so
--- that typing its beginning keeps its rest on screen (typed_along).
function M.offered(buf, row, col, text, command)
  state(buf).offer = { row = row, col = col, text = text, length = line_length(buf, row), command = command }
end

--- Neovim's item (native.lua) is replaced by an answer: what it drew is no longer there to type along.
function M.withdrawn(buf)
  state(buf).offer = nil
end

--- The rest of the item on screen when the only edit since it was drawn is its beginning typed at its place
--- (the cursor after it, the line longer by just that): Copilot and llama.vim keep a suggestion so, without
--- asking again. nil otherwise, or when nothing of it is left.
local function typed_along(buf, now)
  local offer = state(buf).offer
  if not offer or now[1] ~= offer.row then
    return nil
  end
  local typed = now[2] - offer.col
  if typed <= 0 or typed >= #offer.text or line_length(buf, offer.row) ~= offer.length + typed then
    return nil
  end
  local line = api.nvim_buf_get_text(buf, offer.row, offer.col, offer.row, now[2], {})[1] or ''
  if offer.text:sub(1, typed) ~= line then
    return nil
  end
  return offer
end

--- Sends textDocument/inlineCompletion for the cursor; the answer is drawn if still fresh.
function M.request(buf, kind)
  buf = buf or api.nvim_get_current_buf()
  local client = M.client(buf)
  if not client or not in_insert() or not config.options.enabled then
    return
  end
  cancel(buf)
  local st = state(buf)
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = kind or INVOKED }
  local tick, pos = api.nvim_buf_get_changedtick(buf), cursor()
  local function handler(err, result)
    if st.request and st.request.tick == tick then
      st.request = nil
    end
    if err or not fresh(buf, tick, pos) then
      return
    end
    local items = {}
    for _, item in ipairs(result and (result.items or result) or {}) do
      local text = type(item.insertText) == 'table' and item.insertText.value or item.insertText
      if text and text ~= '' then
        items[#items + 1] = item
      end
    end
    st.items, st.index = items, 1
    show_item(buf)
  end
  local ok, id = compat.request(client, 'textDocument/inlineCompletion', params, handler, buf)
  if ok then
    st.request = { id = id, client = client, tick = tick, cursor = pos }
  end
end

--- Automatic request, after config `debounce` ms of quiet typing (0, the default: at once); work made
--- stale by more typing is dropped by changedtick.
function M.schedule(buf)
  if config.options.debounce <= 0 then -- at once: the server debounces model runs only (docs/editors.md)
    if in_insert() then
      return M.request(buf, AUTOMATIC)
    end
    return vim.schedule(function() M.request(buf, AUTOMATIC) end) -- InsertEnter comes before insert mode
  end
  local st = state(buf)
  cancel(buf)
  local tick = api.nvim_buf_get_changedtick(buf)
  local timer = assert(vim.uv.new_timer())
  st.timer = timer
  timer:start(config.options.debounce, 0, vim.schedule_wrap(function()
    if st.timer ~= timer then
      return
    end
    st.timer = nil
    timer:close()
    if api.nvim_buf_is_valid(buf) and api.nvim_buf_get_changedtick(buf) == tick then
      M.request(buf, AUTOMATIC)
    end
  end))
end

--- Paints a draft if it is for this buffer, version and cursor (see M.on_draft), when config
--- `drafts` asks for them.
local function paint(buf, draft, client)
  if not config.options.drafts or api.nvim_get_current_buf() ~= buf or not in_insert() then
    return
  end
  if draft.version ~= vim.lsp.util.buf_versions[buf] then
    return
  end
  local row = draft.position.line
  local col = byte_col(buf, row, draft.position.character, client.offset_encoding)
  local now = cursor()
  if now[1] ~= row or now[2] ~= col then
    return
  end
  local st = state(buf)
  if st.items[st.index] then
    return -- a final item is shown: drafts of a later run (cycling) do not overwrite it
  end
  if draft.final then
    -- The final item replaces the draft once the answer, right behind, is drawn (here, or by
    -- vim.lsp.inline_completion); with no item there is nothing to wait for.
    if draft.text == '' then
      M.clear(buf)
    end
    return
  end
  show(buf, row, col, draft.text, 'DiffusionInfillDraft')
end

--- The info line of a final draft with text, for its item `index` (each item's own, from the
--- draft's `items`): at the end of the cursor's line, while it is the line, version and insert
--- mode the draft is for (config `info`).
local function show_info(buf, draft, index)
  if not config.options.info or not draft.final or draft.text == '' or api.nvim_get_current_buf() ~= buf
      or not in_insert() or draft.version ~= vim.lsp.util.buf_versions[buf] or cursor()[1] ~= draft.position.line then
    return
  end
  local item = draft.items and draft.items[index] or draft
  local confidence = type(item.confidence) == 'number' and ('%.2f'):format(item.confidence) or '-'
  local line = (' %d steps · %d ms · confidence %s · %s'):format(item.step, item.ms or 0, confidence, item.source)
  api.nvim_buf_set_extmark(buf, M.ns, draft.position.line, 0, {
    id = INFO,
    virt_text = { { line, 'DiffusionInfillInfo' } },
    virt_text_pos = 'eol',
  })
  state(buf).info = draft
end

--- `infill/draft` handler: repaints the converging draft, then fires `User DiffusionInfillDraft`
--- (data: the notification's params) for statuslines and tests.
function M.on_draft(_, draft, ctx)
  local buf = vim.uri_to_bufnr(draft.uri)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  if client then
    paint(buf, draft, client)
    show_info(buf, draft, 1)
  end
  api.nvim_exec_autocmds('User', { pattern = 'DiffusionInfillDraft', data = draft, modeline = false })
end

local function exec_accept(buf, item)
  local client = M.client(buf)
  if not (client and item.command) then
    return
  end
  compat.exec_cmd(client, item.command, buf)
end

--- Replaces (row, col)-(end_row, end_col) with `text` and puts the cursor after it.
local function replace(buf, row, col, end_row, end_col, text)
  local lines = vim.split(text, '\n', { plain = true })
  api.nvim_buf_set_text(buf, row, col, end_row, end_col, lines)
  local last = #lines == 1 and col + #lines[1] or #lines[#lines]
  api.nvim_win_set_cursor(0, { row + #lines, last })
end

local function insert(buf, text)
  local row, col = unpack(cursor())
  replace(buf, row, col, row, col, text)
end

local function part(text, how)
  if how == 'word' then
    return text:match('^%s*[%w_]+') or text:match('^%s*[^%w_%s]+') or text
  elseif how == 'line' then
    return text:match('^\n?[^\n]*\n?') or text
  end
  return text
end

--- Inserts the word or line of `text` that `how` names (a partial accept; of a native item too),
--- and shows the rest of it as an item of its own, with `command` (the accepted item's: run when
--- that rest is accepted).
function M.insert_part(buf, text, how, command)
  local piece = part(text, how)
  insert(buf, piece)
  M.keep(buf, text:sub(#piece + 1), command)
end

--- Shows `rest` (what is left of an item after a partial accept or its beginning typed) as an item of its
--- own at the cursor, with `command`; the edit that led here is not a change to answer.
function M.keep(buf, rest, command)
  if rest == '' then
    return
  end
  local st = state(buf)
  st.items, st.index = { { insertText = rest, command = command } }, 1
  st.kept = { tick = api.nvim_buf_get_changedtick(buf), cursor = cursor() }
  show_item(buf)
end

--- Accepts what is shown: `how` is 'all', 'word' or 'line'. Returns false when nothing is shown.
function M.accept(buf, how)
  buf = buf or api.nvim_get_current_buf()
  how = how or 'all'
  local st = states[buf]
  if not (st and st.shown) then
    return false
  end
  local item = st.items[st.index]
  local text = st.shown.text
  M.reset(buf)
  if item and how == 'all' then
    -- The whole item, over its range (which may cover auto-paired closers), then its command.
    local client = M.client(buf)
    local range = item.range
    local full = type(item.insertText) == 'table' and item.insertText.value or item.insertText
    if client and range then
      local sr, er = range.start.line, range['end'].line
      local sc = byte_col(buf, sr, range.start.character, client.offset_encoding)
      local ec = byte_col(buf, er, range['end'].character, client.offset_encoding)
      replace(buf, sr, sc, er, ec, full)
    else
      insert(buf, text)
    end
    exec_accept(buf, item)
  else
    M.insert_part(buf, text, how, item and item.command)
  end
  return true
end

--- Shows the next (or previous) item; asks for several items (Invoked) when there is one.
function M.cycle(buf, step)
  buf = buf or api.nvim_get_current_buf()
  local st = state(buf)
  st.counted = true
  if #st.items <= 1 then
    return M.request(buf, INVOKED)
  end
  st.index = (st.index - 1 + step) % #st.items + 1
  show_item(buf)
  if st.info then
    show_info(buf, st.info, st.index)
  end
end

--- Buffer autocmds: triggers while typing, clears on cursor move and insert leave.
function M.attach(buf)
  local group = api.nvim_create_augroup('diffusion_infill_' .. buf, { clear = true })
  local opts = config.options
  local function changed(ev)
    local st, now = state(buf), cursor()
    local tick = api.nvim_buf_get_changedtick(buf)
    local seen = st.seen
    if ev.event ~= 'InsertEnter' and seen and seen.tick == tick and seen.row == now[1] and seen.col == now[2] then
      return -- a key's CursorMovedI and TextChangedI: it is answered once
    end
    st.seen = { tick = tick, row = now[1], col = now[2] }
    st.at = now
    local kept = st.kept
    if kept and kept.tick == api.nvim_buf_get_changedtick(buf) and kept.cursor[1] == now[1]
        and kept.cursor[2] == now[2] then
      return -- the partial accept's own edit (or the key typed along): its rest stays shown
    end
    local along = typed_along(buf, now)
    M.reset(buf)
    if along then -- kept and advanced: no request
      return M.keep(buf, along.text:sub(now[2] - along.col + 1), along.command)
    end
    if config.auto_trigger(buf) and not opts.native then
      M.schedule(buf)
    end
  end
  api.nvim_create_autocmd({ 'TextChangedI', 'InsertEnter' }, { group = group, buffer = buf, callback = changed })
  api.nvim_create_autocmd('CursorMovedI', {
    group = group,
    buffer = buf,
    callback = function()
      local at, pos = state(buf).at, cursor()
      if not at or at[1] ~= pos[1] or at[2] ~= pos[2] then
        changed({ event = 'CursorMovedI' })
      end
    end,
  })
  api.nvim_create_autocmd({ 'InsertLeave', 'BufLeave' }, {
    group = group,
    buffer = buf,
    callback = function()
      M.reset(buf)
    end,
  })
  api.nvim_create_autocmd('BufWipeout', {
    group = group,
    buffer = buf,
    callback = function()
      cancel(buf)
      states[buf] = nil
    end,
  })
end

function M.detach(buf)
  M.reset(buf)
  pcall(api.nvim_del_augroup_by_name, 'diffusion_infill_' .. buf)
  states[buf] = nil
end

return M
