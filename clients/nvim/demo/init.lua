-- Minimal config for the demo recording (record.sh): this plugin only, the server from PATH.
vim.opt.rtp:prepend(vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h'))
vim.opt.swapfile = false
vim.opt.number = true
vim.opt.termguicolors = true
vim.cmd.colorscheme('habamax')
-- drafts: the recording shows the draft converging, which the plugin paints only when asked
require('diffusion_infill').setup({ settings = { mode = 'single-line' }, drafts = true })
