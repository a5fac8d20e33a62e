'use strict';
// Loads the extension against a recording stand-in for the `vscode` module and
// checks what a user would see: every contributed command is registered, the
// server is started as `qflow lsp`, and "open in console" types the command.
const test = require('node:test');
const assert = require('node:assert/strict');
const Module = require('module');
const path = require('path');
const fs = require('fs');
const os = require('os');

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));

function fakeVscode(settings) {
  const rec = { commands: new Map(), errors: [], terminals: [], clients: [] };
  const vscode = {
    workspace: {
      getConfiguration: () => ({ get: (k) => settings[k] }),
      workspaceFolders: [],
    },
    window: {
      showErrorMessage: (m) => rec.errors.push(m),
      createTerminal: (opts) => {
        const t = { opts, sent: [], show() {}, sendText(s) { this.sent.push(s); } };
        rec.terminals.push(t);
        return t;
      },
      activeTextEditor: undefined,
    },
    commands: {
      registerCommand: (id, fn) => {
        rec.commands.set(id, fn);
        return { dispose() {} };
      },
    },
  };
  const languageclient = {
    TransportKind: { stdio: 0 },
    LanguageClient: class {
      constructor(id, name, serverOptions, clientOptions) {
        Object.assign(this, { id, name, serverOptions, clientOptions, started: false });
        rec.clients.push(this);
      }
      async start() { this.started = true; }
      async stop() { this.started = false; }
      dispose() {}
    },
  };
  return { vscode, languageclient, rec };
}

async function activateWith(settings) {
  const { vscode, languageclient, rec } = fakeVscode(settings);
  const original = Module._load;
  Module._load = function (request, parent, isMain) {
    if (request === 'vscode') return vscode;
    if (request === 'vscode-languageclient/node') return languageclient;
    return original.call(this, request, parent, isMain);
  };
  const extPath = require.resolve('../src/extension');
  delete require.cache[extPath];
  try {
    const ext = require(extPath);
    const context = { subscriptions: [] };
    await ext.activate(context);
    return { ext, rec, vscode, context };
  } finally {
    Module._load = original;
  }
}

test('every contributed command is registered on activation', async () => {
  const { rec } = await activateWith({ path: '/opt/qflow' });
  for (const c of manifest.contributes.commands) {
    assert.ok(rec.commands.has(c.command), `command ${c.command} is not registered`);
  }
});

test('the language client starts `qflow lsp` for bpmn files, saved or untitled', async () => {
  const { rec } = await activateWith({ path: '/opt/qflow' });
  assert.equal(rec.clients.length, 1);
  const client = rec.clients[0];
  assert.ok(client.started);
  assert.equal(client.serverOptions.run.command, '/opt/qflow');
  assert.deepEqual(client.serverOptions.run.args, ['lsp']);
  const schemes = client.clientOptions.documentSelector.map((s) => `${s.scheme}:${s.language}`);
  assert.deepEqual(schemes, ['file:bpmn', 'untitled:bpmn']);
});

test('a missing binary is explained, not a crash', async () => {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-ext-'));
  const savedPath = process.env.PATH;
  process.env.PATH = empty;
  try {
    const { rec } = await activateWith({ path: '' });
    assert.equal(rec.clients.length, 0);
    assert.match(rec.errors[0], /qflow\.path/);
  } finally {
    process.env.PATH = savedPath;
  }
});

test('open in console types `qflow console MODEL` in a new terminal', async () => {
  const { rec } = await activateWith({ path: '/opt/qflow' });
  rec.commands.get('qflow.openInConsole')({ scheme: 'file', fsPath: '/models/dbg08-charge.bpmn' });
  assert.equal(rec.terminals.length, 1);
  assert.deepEqual(rec.terminals[0].sent, ['/opt/qflow console /models/dbg08-charge.bpmn']);
  rec.commands.get('qflow.openInConsole')({ scheme: 'untitled', fsPath: 'Untitled-1' });
  assert.match(rec.errors[0], /save the model/);
});

test('the manifest registers .bpmn files and activates on them', () => {
  const lang = manifest.contributes.languages.find((l) => l.id === 'bpmn');
  assert.ok(lang.extensions.includes('.bpmn'));
  assert.ok(manifest.activationEvents.includes('onLanguage:bpmn'));
  assert.equal(manifest.main, './src/extension.js');
});
