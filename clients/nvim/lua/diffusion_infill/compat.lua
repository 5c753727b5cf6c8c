--- What differs between the Neovim releases the plugin runs on (0.10 to 0.12), in one place: the
--- other modules call these instead of testing versions themselves.
local M = {}

local has_011 = vim.fn.has('nvim-0.11') == 1

--- Whether the plugin may wrap a client's `request` method (0.11+: called as client:request,
--- whoever sends it; 0.10 calls it with the client's fields bound).
M.wraps_requests = has_011

--- Calls the client's function `name`: a method since 0.11, a function with the client bound in 0.10.
local function call(client, name, ...)
  if has_011 then
    return client[name](client, ...)
  end
  return client[name](...)
end

--- Sends a request; returns ok and the request's id.
function M.request(client, method, params, handler, buf)
  return call(client, 'request', method, params, handler, buf)
end

function M.cancel_request(client, id)
  return call(client, 'cancel_request', id)
end

function M.is_stopped(client)
  return call(client, 'is_stopped')
end

function M.stop(client, force)
  return call(client, 'stop', force)
end

--- Runs an item's command on the server (0.10 has no exec_cmd: the command is sent as it is).
function M.exec_cmd(client, command, buf)
  if has_011 then
    return client:exec_cmd(command, { bufnr = buf })
  end
  return client.request('workspace/executeCommand', command, function() end, buf)
end

--- Byte index of UTF-16 or UTF-32 unit `index` of `line` (0.11 changed the signature).
function M.str_byteindex(line, encoding, index)
  if has_011 then
    return vim.str_byteindex(line, encoding, index, false)
  end
  return vim.str_byteindex(line, index, encoding == 'utf-16')
end

--- Neovim's own inline completion (0.12+), reached only through its public functions (enable,
--- is_enabled, get); nil before 0.12 (and in 0.12's early builds, which lacked them).
local inline = vim.lsp.inline_completion
M.inline_completion = inline and inline.enable and inline.is_enabled and inline.get and inline or nil

--- The release whose inline completion internals the plugin was written and tested against.
--- Neovim keeps them private (its "completor", found through vim.lsp._capability) and has
--- reshaped them between releases, so on any other release they are left alone.
M.knows_completor = vim.fn.has('nvim-0.12') == 1 and vim.fn.has('nvim-0.13') == 0

--- vim.lsp.inline_completion's state for `buf` on the release above, when it has the shape the
--- plugin uses (show, request, automatic_request); nil elsewhere. Only native.lua uses it.
function M.completor(buf)
  if not M.knows_completor then
    return nil
  end
  local capability = vim.lsp._capability
  local completors = capability and capability.all and capability.all.inline_completion
  local completor = completors and completors.active and completors.active[buf]
  if completor and type(completor.show) == 'function' and type(completor.request) == 'function'
      and type(completor.automatic_request) == 'function' then
    return completor
  end
end

return M
