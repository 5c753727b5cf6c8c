--- Defaults for require('diffusion_infill').setup(); every key is optional.
local compat = require('diffusion_infill.compat')

local M = {}

M.defaults = {
  cmd = nil, -- server command; nil: { 'diffusion-infill', 'serve' } from PATH
  -- the language table's Neovim defaults (engine/languages.py, tested against this list); the model may know only some
  filetypes = {
    'python',
    'javascript',
    'typescript',
    'javascriptreact',
    'typescriptreact',
    'json',
    'jsonc',
    'markdown',
    'go',
    'rust',
    'c',
    'cpp',
    'java',
    'ruby',
    'sh',
    'bash',
    'yaml',
  },
  root_markers = { '.git' }, -- the workspace root is the nearest folder holding one (else the cwd)
  settings = {}, -- the `diffusionInfill` section: model, device, mode, maxSteps, invokedItems ...
  enabled = true, -- suggestions at all (:DiffusionInfill toggle|enable|disable)
  auto_trigger = true, -- request while typing in insert mode; vim.b.diffusion_infill_auto_trigger overrides it
  info = false, -- after a suggestion, an info line at the end of the line: steps, ms, confidence, source
  drafts = false, -- paint every converging draft (infill/draft) before the answer; the gate may withdraw them
  -- ms of quiet typing before an automatic request; 0: at every key (the server answers from its cache and the
  -- document's drafts at once and waits its own debounce before a model run)
  debounce = 0,
  -- final items drawn by vim.lsp.inline_completion (0.12+) instead of the plugin; nil: on the release
  -- whose inline completion the plugin knows (0.12), its own ghost text elsewhere (native.lua)
  native = nil,
  keymap = { -- insert-mode keys, buffer-local; false disables one
    accept = '<Tab>', -- falls back to a plain <Tab> when nothing is shown
    accept_word = '<M-Right>',
    accept_line = '<M-Down>',
    next = '<M-]>',
    prev = '<M-[>',
    dismiss = '<C-]>',
    trigger = '<M-\\>', -- on demand (Invoked: several items to cycle through)
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  if M.options.cmd == nil then
    M.options.cmd = { 'diffusion-infill', 'serve' }
  elseif type(M.options.cmd) == 'string' then
    M.options.cmd = { M.options.cmd, 'serve' }
  end
  if M.options.native == nil then
    M.options.native = compat.knows_completor
  end
  M.options.native = M.options.native and compat.inline_completion ~= nil
  return M.options
end

--- Whether `buf` asks while typing: suggestions are on and its auto-trigger (its own, else the option) is.
function M.auto_trigger(buf)
  local own = vim.b[buf].diffusion_infill_auto_trigger
  if own == nil then
    own = M.options.auto_trigger
  end
  return M.options.enabled and own
end

return M
