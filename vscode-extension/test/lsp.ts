// Shared by the tests that speak to the real `qflow lsp` (started through the
// extension's own serverOptions, spoken to with vscode-jsonrpc): open a
// document, change its text, ask for its drawing, and shut the server down.

import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection, type MessageConnection } from 'vscode-jsonrpc/node';

import { DIAGRAM_REQUEST, diagramParams, type DiagramResult } from '../src/diagram';
import { serverOptions } from '../src/server';
import { REPO, qflowBinary } from './support';

export interface Server {
  connection: MessageConnection;
  /** What the server wrote on stderr so far (for failure messages). */
  stderr(): string;
  /** textDocument/didOpen of `file` (its text on disk unless given); its URI. */
  open(file: string, text?: string): string;
  /** textDocument/didChange: the whole new text. */
  change(uri: string, text: string): void;
  /** The server's `qflow/diagram` for `uri`. */
  draw(uri: string): Promise<DiagramResult | null>;
  stop(): Promise<void>;
}

export async function startServer(): Promise<Server> {
  const exec = serverOptions(qflowBinary(), REPO);
  const child: ChildProcess = spawn(exec.command, [...(exec.args ?? []), '--stdio'], { ...exec.options, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  connection.onRequest(() => null);
  connection.onNotification(() => undefined);
  connection.listen();
  await connection.sendRequest('initialize', { processId: process.pid, rootUri: pathToFileURL(REPO).href, capabilities: {} });
  await connection.sendNotification('initialized', {});
  let version = 1;
  return {
    connection,
    stderr: () => stderr,
    open(file, text = fs.readFileSync(file, 'utf8')) {
      const uri = pathToFileURL(file).href;
      void connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'bpmn', version: 1, text } });
      return uri;
    },
    change(uri, text) {
      version += 1;
      void connection.sendNotification('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
    },
    draw: (uri) => connection.sendRequest<DiagramResult | null>(DIAGRAM_REQUEST, diagramParams(uri)),
    async stop() {
      await connection.sendRequest('shutdown');
      await connection.sendNotification('exit');
      connection.dispose();
      await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
    },
  };
}
