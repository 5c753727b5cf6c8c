--- :checkhealth diffusion_infill: the server command, the model and the server's status.
local M = {}

--- The server's process id. Neovim's LSP client keeps it to itself, so it is looked up among
--- Neovim's child processes by the command's name; nil unless exactly one matches.
local function server_pid(cmd)
  local name = vim.fs.basename(cmd[1]):sub(1, 15) -- the kernel keeps 15 characters of a name
  local found
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    local proc = vim.api.nvim_get_proc(pid)
    if proc and proc.name == name then
      if found then
        return nil
      end
      found = pid
    end
  end
  return found
end

function M.check()
  local health = vim.health
  local config = require('diffusion_infill.config')
  local ghost = require('diffusion_infill.ghost')
  local opts = config.options
  health.start('diffusion_infill')
  health.info('Neovim ' .. tostring(vim.version()))
  local compat = require('diffusion_infill.compat')
  if opts.native then
    health.ok('final items: vim.lsp.inline_completion (drafts drawn on top)'
      .. (compat.knows_completor and '' or '; its public API only, on a release the plugin was not tested with'))
  else
    health.ok('final items: own ghost text' .. (compat.inline_completion and ' (native = false)' or ''))
  end
  local cmd = opts.cmd or { 'diffusion-infill', 'serve' }
  local exe = vim.fn.exepath(cmd[1])
  if exe ~= '' then
    health.ok('server command: ' .. table.concat(cmd, ' ') .. ' (' .. exe .. ')')
  else
    health.error('server command not found: ' .. cmd[1], {
      'pip install diffusion-infill (or run its install.sh) and put its bin/ on PATH',
      "or setup({ cmd = { '/path/to/.venv/bin/diffusion-infill', 'serve' } })",
    })
  end
  local settings = opts.settings or {}
  health.info('model: ' .. (settings.model or 'the embedded model (or --model in cmd)'))
  health.info('filetypes: ' .. table.concat(opts.filetypes, ', '))
  local clients = vim.lsp.get_clients({ name = ghost.client_name })
  if #clients == 0 then
    health.warn('server not running: open a file of a configured filetype')
  end
  for _, client in ipairs(clients) do
    local server = require('diffusion_infill').servers[client.id] or { state = 'starting' }
    local stopped = require('diffusion_infill.compat').is_stopped(client)
    local report = (stopped or server.state == 'error') and health.error or health.ok
    local pid = server_pid(cmd)
    local model = server.model and (' %s (engine %s)'):format(server.model, server.engine) or ''
    local message = server.message and server.message ~= '' and ('; ' .. server.message) or ''
    report(('server running (client %d%s, %s): %s%s%s'):format(client.id, pid and (', pid ' .. pid) or '',
      client.offset_encoding, server.state, model, message))
  end
  health.info(('suggestions %s, auto-trigger %s'):format(opts.enabled and 'on' or 'off',
    opts.auto_trigger and 'on' or 'off'))
end

return M
