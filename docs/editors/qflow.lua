-- qflow's language server in Neovim (docs/editors.md). Put this file where
-- Neovim reads Lua (~/.config/nvim/lua/qflow.lua) and `require('qflow')` in
-- init.lua, or source it with `-u`.
--
-- `.bpmn` files, and `.bpmn20.xml` ones (the suffix Activiti and Flowable
-- name models with), get their own filetype, `bpmn` (drawn with XML's syntax), so
-- the server runs for BPMN models only: attaching it to every XML file would
-- put QF002 ("not a BPMN definitions document") on each one that is not BPMN.
-- Works on Neovim 0.7 (Debian 12's) and later.

vim.cmd([[autocmd BufRead,BufNewFile *.bpmn,*.bpmn20.xml setfiletype bpmn]])

local function root(path)
  -- The nearest folder with a .bpmnlintrc, a qflow.toml or a .git, else the file's own.
  local dir = vim.fn.fnamemodify(path, ':p:h')
  local found = vim.fn.findfile('qflow.toml', dir .. ';')
  if found == '' then found = vim.fn.findfile('.bpmnlintrc', dir .. ';') end
  if found == '' then found = vim.fn.finddir('.git', dir .. ';') end
  if found == '' then return dir end
  return vim.fn.fnamemodify(found, ':p:h')
end

local clients = {}

vim.api.nvim_create_autocmd('FileType', {
  pattern = 'bpmn',
  callback = function(args)
    vim.bo[args.buf].syntax = 'xml'
    local dir = root(vim.api.nvim_buf_get_name(args.buf))
    local config = {
      name = 'qflow',
      cmd = { vim.g.qflow_path or 'qflow', 'lsp' },
      root_dir = dir,
    }
    if vim.lsp.start then
      -- Neovim 0.8+: one client per root, reused.
      vim.lsp.start(config, { bufnr = args.buf })
      return
    end
    -- Neovim 0.7: start one client per root and attach each buffer to it.
    if not clients[dir] then
      clients[dir] = vim.lsp.start_client(config)
    end
    vim.lsp.buf_attach_client(args.buf, clients[dir])
  end,
})
