--- diffusion-infill for Neovim: starts `diffusion-infill serve` for the configured
--- filetypes and shows its inline completions as ghost text while they converge.
---
---   require('diffusion_infill').setup()  -- or setup({ cmd = ..., settings = { mode = 'single-line' } })

-- Older Neovims lack the LSP and autocommand API used below: instead of tracebacks at setup (and a
-- "Press ENTER" prompt), every use of the plugin says once, in one line, what to run instead.
if vim.fn.has('nvim-0.10') == 0 then
  local v = vim.version()
  -- one screen line: a longer message would bring the "Press ENTER" prompt
  local message = string.format('diffusion-infill needs Neovim 0.10+ (this is %d.%d.%d); .venv/bin/nvim is 0.12',
    v.major, v.minor, v.patch)
  local told = false
  local function tell()
    if not told then
      told = true
      vim.api.nvim_echo({ { message, 'WarningMsg' } }, true, {})
    end
  end
  return setmetatable({}, { __index = function() return tell end })
end

local compat = require('diffusion_infill.compat')
local config = require('diffusion_infill.config')
local ghost = require('diffusion_infill.ghost')
local native = require('diffusion_infill.native')

local api = vim.api
local M = {}

---@class diffusion_infill.Server the server's last `infill/status` (docs/protocol.md)
---@field state string 'loading', 'ready' or 'error'; 'starting' until the first one comes
---@field engine? string
---@field model? string
---@field message? string
M.servers = {} ---@type table<integer, diffusion_infill.Server> client id -> its state
M.log = {} ---@type string[] the server's window/logMessage and window/showMessage lines, the last LOG_LINES
local LOG_LINES = 500
local LOG_NAME = 'diffusion-infill://log'
local MESSAGE_TYPES = { 'ERROR', 'WARNING', 'INFO', 'LOG', 'DEBUG' } -- lsp.MessageType, from 1

--- Whether final items are vim.lsp.inline_completion's (native.lua) rather than the plugin's own.
local function native_mode()
  return config.options.native
end

--- Asks vim.lsp.inline_completion to accept its item; false in the plugin's own mode.
local function native_accept(buf, how)
  return native_mode() and native.accept(buf, how)
end

--- Accepts what is shown ('all', 'word' or 'line'); false when nothing is shown.
function M.accept(how)
  local buf = api.nvim_get_current_buf()
  how = how or 'all'
  if ghost.visible(buf) then -- a draft, or an item of our own request
    return ghost.accept(buf, how)
  end
  return native_accept(buf, how)
end

function M.dismiss()
  local buf = api.nvim_get_current_buf()
  ghost.reset(buf)
  if native_mode() then
    native.hide(buf)
  end
end

--- The next or previous item. vim.lsp.inline_completion asks Automatic only (one item), so in
--- native mode the first press asks for several (Invoked) and they are drawn and cycled here.
function M.cycle(step)
  local buf = api.nvim_get_current_buf()
  if native_mode() and not ghost.visible(buf) then
    native.hide(buf)
  end
  ghost.cycle(buf, step)
end

--- Asks on demand (Invoked: several items); drawn by the plugin, in native mode too.
function M.trigger()
  local buf = api.nvim_get_current_buf()
  if native_mode() then
    native.hide(buf)
  end
  ghost.request(buf, 1)
end

local actions = {
  next = function() M.cycle(1) end,
  prev = function() M.cycle(-1) end,
  dismiss = M.dismiss,
  trigger = M.trigger,
}
local accepts = { accept = 'all', accept_word = 'word', accept_line = 'line' }

--- Buffer-local insert-mode keys; accept keys fall through to themselves when nothing is shown.
local function map_keys(buf)
  for name, lhs in pairs(config.options.keymap) do
    local how = accepts[name]
    if lhs and (how or actions[name]) then
      vim.keymap.set('i', lhs, function()
        if not how then
          vim.schedule(actions[name])
          return ''
        elseif ghost.visible(buf) then
          vim.schedule(function() ghost.accept(buf, how) end) -- no edits inside an <expr> mapping
          return ''
        elseif native_accept(buf, how) then
          return ''
        end
        return lhs
      end, { buffer = buf, expr = true, replace_keycodes = true, desc = 'diffusion-infill: ' .. name })
    end
  end
end

--- A code action that cannot be carried out (the server's RequestFailed: the document changed,
--- no valid fix) is told as one warning line instead of Neovim's raw error code.
local function resolve_answer(handler)
  return function(err, result, ctx, ...)
    if err and err.code == vim.lsp.protocol.ErrorCodes.RequestFailed then
      vim.notify('diffusion-infill: ' .. err.message, vim.log.levels.WARN)
      return
    end
    return handler(err, result, ctx, ...)
  end
end

--- Whether an inline completion request may go out: suggestions are on and, for one sent while
--- typing (Automatic), its buffer asks while typing.
local function asked(params)
  local automatic = params.context and params.context.triggerKind == 2 -- lsp.InlineCompletionTriggerKind.Automatic
  return config.options.enabled and (not automatic or config.auto_trigger(vim.uri_to_bufnr(params.textDocument.uri)))
end

--- Wraps the answers of this client's requests, whoever sends them (0.11+: client:request).
local function wrap_requests(client)
  if client._diffusion_infill_request or not compat.wraps_requests then
    return
  end
  local request = client.request
  client._diffusion_infill_request = request
  client.request = function(self, method, params, handler, buf)
    if method == 'textDocument/inlineCompletion' and not asked(params) then
      return false -- off, or this buffer asks only on demand: whoever sends it, it is not sent
    end
    if handler and method == 'textDocument/inlineCompletion' and native_mode() then
      local doc = vim.uri_to_bufnr(params.textDocument.uri)
      if doc ~= api.nvim_get_current_buf() then
        -- 0.12's vim.lsp.inline_completion asks for every buffer it was ever enabled in at any
        -- InsertEnter, and fails drawing the answer of one that is not in a window.
        return false
      end
      return native.request(doc, self, handler, function(answer)
        return request(self, method, params, answer, buf)
      end)
    elseif handler and method == 'codeAction/resolve' then
      handler = resolve_answer(handler)
    end
    return request(self, method, params, handler, buf)
  end
end

local function on_attach(client, buf)
  ghost.attach(buf)
  map_keys(buf)
  wrap_requests(client)
  if native_mode() then
    native.enable(buf, config.auto_trigger(buf))
    api.nvim_create_autocmd('TextChangedI', {
      group = api.nvim_create_augroup('diffusion_infill_native_' .. buf, { clear = true }),
      buffer = buf,
      callback = function()
        native.edited(buf)
      end,
    })
  end
end

--- Keeps the server's line for :DiffusionInfill log.
local function remember(kind, message)
  table.insert(M.log, ('%s [%s] %s'):format(os.date('%H:%M:%S'), MESSAGE_TYPES[kind] or 'LOG', message))
  if #M.log > LOG_LINES then
    table.remove(M.log, 1)
  end
end

local function status_changed()
  api.nvim_exec_autocmds('User', { pattern = 'DiffusionInfillStatus', modeline = false })
  vim.cmd.redrawstatus({ bang = true })
end

local function on_status(_, result, ctx)
  M.servers[ctx.client_id] = result
  status_changed()
end

--- Passes a window/* message on to Neovim's own handler after keeping it for :DiffusionInfill log.
local function logged(method)
  return function(err, result, ctx)
    remember(result.type, result.message)
    return vim.lsp.handlers[method](err, result, ctx)
  end
end

-- Whether an Lsp* autocmd event comes from our server's client.
local function is_ours(ev)
  local client = vim.lsp.get_client_by_id(ev.data.client_id)
  return client ~= nil and client.name == ghost.client_name
end

local function client_config(buf)
  local opts = config.options
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  capabilities.textDocument.inlineCompletion = capabilities.textDocument.inlineCompletion or {}
  local root = vim.fs.root(buf, opts.root_markers) or vim.fn.getcwd()
  return {
    name = ghost.client_name,
    cmd = opts.cmd,
    root_dir = root,
    capabilities = capabilities,
    -- No settings: none sent (an empty Lua table would go out as the JSON array `[]`).
    init_options = next(opts.settings) and { diffusionInfill = opts.settings } or nil,
    settings = next(opts.settings) and { diffusionInfill = opts.settings } or nil,
    handlers = {
      ['infill/draft'] = ghost.on_draft,
      ['infill/status'] = on_status,
      ['window/showMessage'] = logged('window/showMessage'),
      ['window/logMessage'] = logged('window/logMessage'),
    },
    on_attach = on_attach,
  }
end

--- Starts (or reuses) the server for `buf` if its filetype is configured.
function M.start(buf)
  buf = buf or api.nvim_get_current_buf()
  if not vim.tbl_contains(config.options.filetypes, vim.bo[buf].filetype) or vim.bo[buf].buftype ~= '' then
    return
  end
  return vim.lsp.start(client_config(buf), { bufnr = buf })
end

--- The buffers attached to the server.
local function attached()
  local buffers = {}
  for _, client in ipairs(vim.lsp.get_clients({ name = ghost.client_name })) do
    vim.list_extend(buffers, vim.tbl_keys(client.attached_buffers))
  end
  return buffers
end

--- After suggestions or `buf`'s auto-trigger were switched: nothing stale stays shown, and
--- vim.lsp.inline_completion asks while typing only where the buffer does.
local function switched(buf)
  ghost.reset(buf)
  if native_mode() then
    native.hide(buf)
    native.enable(buf, config.auto_trigger(buf))
  end
end

--- Suggestions on (`on` true) or off everywhere, until switched again.
function M.enable(on)
  config.options.enabled = on ~= false
  for _, buf in ipairs(attached()) do
    switched(buf)
  end
  status_changed()
  vim.notify('diffusion-infill: ' .. (config.options.enabled and 'on' or 'off'))
end

function M.disable()
  M.enable(false)
end

function M.toggle()
  M.enable(not config.options.enabled)
end

--- Switches `buf`'s auto-trigger (vim.b.diffusion_infill_auto_trigger); the trigger key still asks.
function M.toggle_auto_trigger(buf)
  buf = buf or api.nvim_get_current_buf()
  vim.b[buf].diffusion_infill_auto_trigger = not config.auto_trigger(buf)
  switched(buf)
  status_changed()
  vim.notify('diffusion-infill: auto-trigger ' .. (vim.b[buf].diffusion_infill_auto_trigger and 'on' or 'off'))
end

--- For a statusline: 'infill: starting', 'infill: loading', 'infill: ready', 'infill: error',
--- 'infill: off', 'infill: ready, on demand' (this buffer's auto-trigger is off); '' where no server runs.
-- buffer -> the id of its server being restarted: "starting" from the restart until another one attaches
local restarting = {}

function M.status(buf)
  buf = buf or api.nvim_get_current_buf()
  local client = ghost.client(buf)
  if restarting[buf] and (not client or client.id == restarting[buf]) then
    return 'infill: starting'
  end
  restarting[buf] = nil
  if not client then
    return ''
  elseif not config.options.enabled then
    return 'infill: off'
  end
  local state = (M.servers[client.id] or {}).state or 'starting'
  if state == 'ready' and not config.auto_trigger(buf) then
    return 'infill: ready, on demand'
  end
  return 'infill: ' .. state
end

--- :DiffusionInfill status: the state, the model, the engine and what the server said last.
function M.print_status()
  local buf = api.nvim_get_current_buf()
  local client = ghost.client(buf)
  local server = client and M.servers[client.id] or {}
  local parts = { client and M.status(buf) or 'infill: no server for this buffer' }
  if server.model then
    parts[#parts + 1] = ('%s (engine %s)'):format(server.model, server.engine)
  end
  if server.message and server.message ~= '' then
    parts[#parts + 1] = server.message
  end
  vim.notify(table.concat(parts, '; '))
end

--- Stops the server and starts it again for the buffers it served (a stuck or failed load, a
--- server updated on disk).
function M.restart()
  for _, client in ipairs(vim.lsp.get_clients({ name = ghost.client_name })) do
    local buffers = vim.tbl_keys(client.attached_buffers)
    for _, buf in ipairs(buffers) do
      restarting[buf] = client.id
    end
    M.servers[client.id] = nil
    compat.stop(client)
    local timer, waited = assert(vim.uv.new_timer()), 0
    timer:start(50, 50, vim.schedule_wrap(function()
      waited = waited + 50
      if not compat.is_stopped(client) then
        if waited == 3000 then
          compat.stop(client, true) -- it did not exit when asked
        end
        return
      end
      timer:stop()
      timer:close()
      for _, buf in ipairs(buffers) do
        if api.nvim_buf_is_valid(buf) then
          M.start(buf)
        end
      end
      status_changed()
    end))
  end
end

--- :DiffusionInfill log: the server's messages in a scratch window.
function M.show_log()
  local lines = { ("-- diffusion-infill: the server's messages (Neovim's LSP log: %s)"):format(vim.lsp.log.get_filename()) }
  for _, entry in ipairs(M.log) do
    vim.list_extend(lines, vim.split(entry, '\n', { plain = true }))
  end
  local shown = vim.fn.bufnr(LOG_NAME)
  if shown ~= -1 then
    api.nvim_buf_delete(shown, { force = true }) -- shown again, with what came since
  end
  vim.cmd('botright split')
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  api.nvim_win_set_buf(0, buf)
  vim.bo[buf].bufhidden, vim.bo[buf].modifiable = 'wipe', false
  api.nvim_buf_set_name(buf, LOG_NAME)
end

local subcommands = {
  trigger = function() M.trigger() end,
  dismiss = function() M.dismiss() end,
  start = function() M.start() end,
  status = M.print_status,
  toggle = M.toggle,
  enable = function() M.enable(true) end,
  disable = M.disable,
  toggle_auto = function() M.toggle_auto_trigger() end,
  restart = M.restart,
  log = M.show_log,
}

--- Ghost text colours, for true colour and 256-colour terminals (the default colour scheme gives
--- Comment and NonText no cterm colour: ghost text would look like code). The converging draft
--- is darker than the final item. vim.lsp.inline_completion draws its item as ComplHint (a
--- link to NonText, the draft's grey): while it is Neovim's default, it takes the final item's look.
local function highlights()
  api.nvim_set_hl(0, 'DiffusionInfillGhost', { fg = '#9b9ea4', ctermfg = 248, italic = true, default = true })
  api.nvim_set_hl(0, 'DiffusionInfillDraft', { fg = '#5c6066', ctermfg = 240, italic = true, default = true })
  api.nvim_set_hl(0, 'DiffusionInfillCount', { link = 'MoreMsg', default = true }) -- ' (2/3)' when cycling
  api.nvim_set_hl(0, 'DiffusionInfillInfo', { link = 'Comment', default = true }) -- the info line
  if native_mode() and api.nvim_get_hl(0, { name = 'ComplHint' }).link == 'NonText' then
    api.nvim_set_hl(0, 'ComplHint', { link = 'DiffusionInfillGhost' })
  end
end

function M.setup(opts)
  config.set(opts)
  highlights()
  local group = api.nvim_create_augroup('diffusion_infill', { clear = true })
  api.nvim_create_autocmd('ColorScheme', { group = group, callback = highlights })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = config.options.filetypes,
    callback = function(ev)
      M.start(ev.buf)
    end,
  })
  api.nvim_create_autocmd('LspDetach', {
    group = group,
    callback = function(ev)
      if is_ours(ev) then
        ghost.detach(ev.buf)
      end
    end,
  })
  api.nvim_create_user_command('DiffusionInfill', function(cmd)
    local sub = cmd.fargs[1] or 'trigger'
    if subcommands[sub] then
      subcommands[sub]()
    else
      vim.notify('diffusion-infill: unknown subcommand ' .. sub, vim.log.levels.ERROR)
    end
  end, { nargs = '?', complete = function() return vim.tbl_keys(subcommands) end })
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      M.start(buf)
    end
  end
end

return M
