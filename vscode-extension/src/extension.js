'use strict';
// The VS Code face of qflow: it launches `qflow lsp` for .bpmn files and offers
// "open in console". Everything it shows comes from the server.

const vscode = require('vscode');
const { resolveBinary, serverCommand, consoleCommandLine } = require('./server');

let client;

function binaryFromSettings() {
  const configuredPath = vscode.workspace.getConfiguration('qflow').get('path');
  const workspaceFolders = (vscode.workspace.workspaceFolders || []).map((f) => f.uri.fsPath);
  return resolveBinary({ configuredPath, workspaceFolders });
}

function missingBinaryMessage() {
  return 'qflow: cannot find the `qflow` binary. Install it (`cargo install --path .` in the qflow repository) or set "qflow.path" in your settings.';
}

async function startClient(context) {
  const binary = binaryFromSettings();
  if (!binary) {
    vscode.window.showErrorMessage(missingBinaryMessage());
    return undefined;
  }
  // Loaded lazily so the commands still register when the module is missing.
  const { LanguageClient, TransportKind } = require('vscode-languageclient/node');
  const run = { ...serverCommand(binary), transport: TransportKind.stdio };
  const c = new LanguageClient(
    'qflow',
    'qflow',
    { run, debug: run },
    {
      documentSelector: [
        { scheme: 'file', language: 'bpmn' },
        { scheme: 'untitled', language: 'bpmn' },
      ],
    },
  );
  await c.start();
  context.subscriptions.push(c);
  return c;
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('qflow.openInConsole', (uri) => {
      const target = uri || (vscode.window.activeTextEditor && vscode.window.activeTextEditor.document.uri);
      if (!target || target.scheme !== 'file') {
        vscode.window.showErrorMessage('qflow: save the model to a file first, then open it in the console.');
        return;
      }
      const binary = binaryFromSettings();
      if (!binary) {
        vscode.window.showErrorMessage(missingBinaryMessage());
        return;
      }
      const terminal = vscode.window.createTerminal({ name: 'qflow console' });
      terminal.show();
      terminal.sendText(consoleCommandLine(binary, target.fsPath));
    }),
    vscode.commands.registerCommand('qflow.restartServer', async () => {
      if (client) {
        await client.stop();
      }
      client = await startClient(context);
    }),
  );
  client = await startClient(context);
}

async function deactivate() {
  if (client) {
    await client.stop();
    client = undefined;
  }
}

module.exports = { activate, deactivate };
