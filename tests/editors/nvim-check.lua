-- Run by tests/editors.rs: Neovim headless, with docs/editors/qflow.lua as
-- its only configuration. Opens the .bpmn file given, waits for the
-- server's diagnostics, then an .xml file, and writes what it saw to the
-- file named by $QFLOW_NVIM_OUT: one line per diagnostic code of the model,
-- then `xml clients: N` (the language servers attached to the XML file).
local out = assert(io.open(os.getenv('QFLOW_NVIM_OUT'), 'w'))
local model, xml = os.getenv('QFLOW_NVIM_MODEL'), os.getenv('QFLOW_NVIM_XML')

vim.cmd('edit ' .. vim.fn.fnameescape(model))
local buf = vim.api.nvim_get_current_buf()
out:write('filetype: ' .. vim.bo[buf].filetype .. '\n')
local ok = vim.wait(20000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
out:write('diagnostics: ' .. tostring(ok) .. '\n')
for _, d in ipairs(vim.diagnostic.get(buf)) do
  local code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) or '?'
  out:write('code: ' .. tostring(code) .. ' line ' .. tostring(d.lnum + 1) .. '\n')
end

vim.cmd('edit ' .. vim.fn.fnameescape(xml))
local xbuf = vim.api.nvim_get_current_buf()
vim.wait(500)
local attached = 0
for _ in pairs(vim.lsp.buf_get_clients(xbuf)) do attached = attached + 1 end
out:write('xml filetype: ' .. vim.bo[xbuf].filetype .. '\n')
out:write('xml clients: ' .. attached .. '\n')
out:close()
vim.cmd('qall!')
