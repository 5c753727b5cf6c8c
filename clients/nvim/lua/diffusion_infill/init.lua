--- diffusion-infill for Neovim: starts `diffusion-infill serve` for the configured
--- filetypes and shows its inline completions as ghost text while they converge.
---
---   require('diffusion_infill').setup()  -- or setup({ cmd = ..., settings = { mode = 'single-line' } })
local config = require('diffusion_infill.config')
local ghost = require('diffusion_infill.ghost')

local api = vim.api
local M = {}

M.status = {} ---@type table<integer, string> client id -> last progress or error message

local function native()
  return config.options.native
end

--- Asks vim.lsp.inline_completion to accept its item (all of it, or a word or line of it).
--- Safe inside an <expr> mapping: the edit is scheduled.
local function native_accept(buf, how)
  if not native() then
    return false
  end
  if how == 'all' then
    return vim.lsp.inline_completion.get({ bufnr = buf })
  end
  return vim.lsp.inline_completion.get({
    bufnr = buf,
    on_accept = function(item)
      local text = type(item.insert_text) == 'table' and item.insert_text.value or item.insert_text
      ghost.insert_part(buf, text, how)
    end,
  })
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
  if native() then
    vim.lsp.inline_completion.enable(false, { bufnr = buf })
    vim.lsp.inline_completion.enable(true, { bufnr = buf })
  end
end

function M.cycle(step)
  if native() and not ghost.visible() then
    return vim.lsp.inline_completion.select({ count = step })
  end
  ghost.cycle(nil, step)
end

function M.trigger()
  ghost.request(nil, 1)
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

local function empty_range(item)
  local r = item.range
  return r and r.start.line == r['end'].line and r.start.character == r['end'].character
end

--- vim.lsp.inline_completion draws an item with a `range` as an overlay, which would hide the
--- code after a mid-line cursor; an empty range (insert at the cursor) means the same as none,
--- which it draws inline. So this client's answers lose their empty ranges before it sees them,
--- and the draft is cleared once the answer is drawn.
local function drop_empty_ranges(client)
  if client._diffusion_infill_request then
    return
  end
  local request = client.request
  client._diffusion_infill_request = request
  client.request = function(self, method, params, handler, ...)
    if method == 'textDocument/inlineCompletion' and handler then
      local inner = handler
      handler = function(err, result, ctx, ...)
        for _, item in ipairs(result and (result.items or result) or {}) do
          if empty_range(item) then
            item.range = nil
          end
        end
        local value = inner(err, result, ctx, ...)
        if ctx and ctx.bufnr then
          ghost.clear(ctx.bufnr) -- the final item is drawn now: the draft goes without a blank frame
        end
        return value
      end
    end
    return request(self, method, params, handler, ...)
  end
end

local function on_attach(client, buf)
  ghost.attach(buf)
  map_keys(buf)
  if native() then
    drop_empty_ranges(client)
    vim.lsp.inline_completion.enable(true, { bufnr = buf })
  end
end

local function on_progress(_, result, ctx)
  local value = result and result.value or {}
  if value.message or value.title then
    M.status[ctx.client_id] = value.message or value.title
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
    init_options = { diffusionInfill = opts.settings },
    settings = { diffusionInfill = opts.settings },
    handlers = {
      ['infill/draft'] = ghost.on_draft,
      ['window/showMessage'] = function(err, result, ctx)
        M.status[ctx.client_id] = result.message
        return vim.lsp.handlers['window/showMessage'](err, result, ctx)
      end,
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

function M.setup(opts)
  config.set(opts)
  api.nvim_set_hl(0, 'DiffusionInfillGhost', { link = 'Comment', default = true })
  api.nvim_set_hl(0, 'DiffusionInfillDraft', { link = 'NonText', default = true })
  local group = api.nvim_create_augroup('diffusion_infill', { clear = true })
  api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = config.options.filetypes,
    callback = function(ev)
      M.start(ev.buf)
    end,
  })
  api.nvim_create_autocmd('LspProgress', {
    group = group,
    callback = function(ev)
      if is_ours(ev) then
        on_progress(nil, ev.data.params, { client_id = ev.data.client_id })
      end
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
    if sub == 'trigger' then
      M.trigger()
    elseif sub == 'dismiss' then
      M.dismiss()
    elseif sub == 'start' then
      M.start()
    else
      vim.notify('diffusion-infill: unknown subcommand ' .. sub, vim.log.levels.ERROR)
    end
  end, { nargs = '?', complete = function() return { 'trigger', 'dismiss', 'start' } end })
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      M.start(buf)
    end
  end
end

return M
