// The real `qflow lsp`, started through the extension's own `serverOptions`
// exactly the way vscode-languageclient spawns an Executable over stdio, and
// spoken to with vscode-jsonrpc: diagnostics on the samples (codes and
// ranges), a hover on a <q:retry>, a quick fix applied and re-checked, and a
// clean shutdown.

import * as assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { StreamMessageReader, StreamMessageWriter, createMessageConnection, type MessageConnection } from 'vscode-jsonrpc/node';
import type {
  CodeAction,
  Diagnostic,
  Hover,
  InitializeResult,
  MarkupContent,
  PublishDiagnosticsParams,
  TextEdit,
} from 'vscode-languageserver-protocol';

import { checkArgv, parseCheckOutput } from '../src/commands';
import { serverOptions } from '../src/server';
import { REPO, SAMPLES, modelsUnder, qflowBinary } from './support';

const WAIT_MS = 20_000;

/** Spawn as vscode-languageclient does for an Executable with TransportKind.stdio. */
function launch(binary: string): ChildProcess {
  const exec = serverOptions(binary, REPO);
  assert.equal(exec.transport, 0, 'the extension starts the server on stdio');
  const args = [...(exec.args ?? []), '--stdio'];
  return spawn(exec.command, args, { ...exec.options, stdio: ['pipe', 'pipe', 'pipe'] });
}

class Session {
  readonly published = new Map<string, PublishDiagnosticsParams[]>();
  private waiters: Array<() => void> = [];
  stderr = '';

  constructor(
    readonly child: ChildProcess,
    readonly connection: MessageConnection,
  ) {
    child.stderr?.on('data', (d: Buffer) => (this.stderr += d.toString()));
    connection.onNotification('textDocument/publishDiagnostics', (p: PublishDiagnosticsParams) => {
      const list = this.published.get(p.uri) ?? [];
      list.push(p);
      this.published.set(p.uri, list);
      for (const w of this.waiters.splice(0)) w();
    });
    // The server may ask the client things (configuration, registrations): answer politely.
    connection.onRequest((method) => (method === 'workspace/configuration' ? [] : null));
    connection.listen();
  }

  /** The diagnostics published for `uri` at `version` (or any version when the server sends none). */
  async diagnostics(uri: string, version: number): Promise<Diagnostic[]> {
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const hit = (this.published.get(uri) ?? []).find((p) => p.version === undefined || p.version === version);
      if (hit) {
        return hit.diagnostics;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(`no diagnostics for ${uri} version ${version} within ${WAIT_MS} ms; stderr: ${this.stderr}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }

  open(file: string, text = fs.readFileSync(file, 'utf8')): { uri: string; text: string } {
    const uri = pathToFileURL(file).href;
    void this.connection.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'bpmn', version: 1, text } });
    return { uri, text };
  }
}

let session: Session;

before(async () => {
  const child = launch(qflowBinary());
  const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  session = new Session(child, connection);
  const init: InitializeResult = await connection.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(REPO).href,
    workspaceFolders: [{ uri: pathToFileURL(REPO).href, name: 'qflow' }],
    capabilities: {
      textDocument: {
        hover: { contentFormat: ['markdown', 'plaintext'] },
        publishDiagnostics: { relatedInformation: true, versionSupport: true, codeDescriptionSupport: true },
        codeAction: { codeActionLiteralSupport: { codeActionKind: { valueSet: ['quickfix'] } }, isPreferredSupport: true },
      },
    },
  });
  assert.equal(init.serverInfo?.name, 'qflow');
  assert.ok(init.capabilities.hoverProvider, 'the server offers hovers');
  assert.ok(init.capabilities.codeActionProvider, 'the server offers quick fixes');
  await connection.sendNotification('initialized', {});
});

after(async () => {
  // shutdown then exit: the server ends with code 0 even though stdin stays open.
  const exited = new Promise<number | null>((resolve) => session.child.on('exit', (code) => resolve(code)));
  await session.connection.sendRequest('shutdown');
  await session.connection.sendNotification('exit');
  const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running'), 5000))]);
  session.connection.dispose();
  if (code !== 0) {
    session.child.kill();
  }
  assert.equal(code, 0, 'qflow lsp exits with 0 after shutdown + exit');
});

/** Where `needle` first starts in `text`, as an LSP position (the samples are ASCII up to there). */
function positionOf(text: string, needle: string, from = 0): { line: number; character: number } {
  const at = text.indexOf(needle, from);
  assert.notEqual(at, -1, `${needle} is in the sample`);
  const before = text.slice(0, at).split('\n');
  return { line: before.length - 1, character: before[before.length - 1].length };
}

test('a broken sample gets its code at the exact place: QF022 on the <q:retry>, naming the boundary', async () => {
  const file = path.join(SAMPLES, 'broken', 'QF022-retry-beside-routed-timer.bpmn');
  const { uri, text } = session.open(file);
  const diags = await session.diagnostics(uri, 1);
  const qf022 = diags.find((d) => d.code === 'QF022');
  assert.ok(qf022, `QF022 published; got ${diags.map((d) => d.code).join(', ')}`);
  assert.equal(qf022.severity, 1);
  assert.equal(qf022.source, 'qflow');
  // The primary range is the element's name, `q:retry`.
  const retry = positionOf(text, '<q:retry');
  assert.deepEqual(qf022.range, {
    start: { line: retry.line, character: retry.character + 1 },
    end: { line: retry.line, character: retry.character + 1 + 'q:retry'.length },
  });
  assert.match(qf022.codeDescription?.href ?? '', /QF022/);
  const related = qf022.relatedInformation ?? [];
  assert.ok(related.length > 0, 'QF022 names the boundary as related information');
  assert.equal(related[0].location.uri, uri);
  const boundary = positionOf(text, '<bpmn:boundaryEvent');
  assert.deepEqual(related[0].location.range.start, { line: boundary.line, character: boundary.character + 1 });
  assert.match(related[0].message, /too-slow/);
});

test('a valid sample has no errors', async () => {
  const { uri } = session.open(path.join(SAMPLES, 'dbg08-charge.bpmn'));
  const diags = await session.diagnostics(uri, 1);
  assert.deepEqual(
    diags.filter((d) => d.severity === 1),
    [],
  );
});

test('every sample: the server and Check Workspace (qflow check --format lsp) report the same diagnostics', async () => {
  const files = modelsUnder(SAMPLES);
  assert.ok(files.length >= 20, `samples found: ${files.length}`);
  let stdout: string;
  try {
    stdout = execFileSync(qflowBinary(), checkArgv(files), { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  } catch (e) {
    // exit 1: the broken samples have errors; the JSON is still on stdout.
    stdout = (e as { stdout: string }).stdout;
  }
  const fromCheck = parseCheckOutput(stdout);
  const codes = new Set<string>();
  for (const file of files) {
    const { uri } = session.open(file);
    const fromServer = await session.diagnostics(uri, 1);
    const simplify = (ds: Diagnostic[]) =>
      ds.map((d) => ({ code: d.code, severity: d.severity, range: d.range, message: d.message, related: d.relatedInformation ?? [] }));
    assert.deepEqual(simplify(fromCheck.get(uri) ?? []), simplify(fromServer), `diagnostics of ${path.relative(REPO, file)}`);
    for (const d of fromServer) codes.add(String(d.code));
  }
  // The broken samples cover the codes one each: the comparison was not vacuous.
  for (const code of ['QF001', 'QF004', 'QF020', 'QF022', 'QF033']) {
    assert.ok(codes.has(code), `${code} seen among the samples`);
  }
});

test('hovering a <q:retry> shows its whole schedule (DBG-08: six attempts over 13 h 1 min)', async () => {
  const file = path.join(SAMPLES, 'dbg08-long-outage.bpmn');
  const { uri, text } = session.open(file);
  await session.diagnostics(uri, 1);
  const at = positionOf(text, '<q:retry');
  const hover: Hover | null = await session.connection.sendRequest('textDocument/hover', {
    textDocument: { uri },
    position: { line: at.line, character: at.character + 4 },
  });
  assert.ok(hover, 'a hover on the <q:retry> element');
  const contents = hover.contents as MarkupContent;
  assert.equal(contents.kind, 'markdown');
  assert.match(contents.value, /^\*\*q:retry\*\* on `charge`/);
  // The policy's own timetable, and how far a provider's retry-after (capped
  // at 1 d without maxDelay) can stretch it.
  assert.match(
    contents.value,
    /\*\*Worst case:\*\* 6 attempts over 13 h 1 min at the policy's own delays; a provider's retry-after can stretch each wait to 1 d \(the default cap; maxDelay sets it\): at most 5 d\./,
  );
  // Delays 1, 5, 25, 125, 625 minutes: the last attempt starts 46,860 s after the first.
  assert.match(contents.value, /\| 2 \| 1 min \| 1 min \|/);
  assert.match(contents.value, /\| 6 \| 10 h 25 min \| 13 h 1 min \|/);
  assert.match(contents.value, /fails after attempt 6/);
  assert.deepEqual(hover.range?.start, { line: at.line, character: at.character + 1 }, 'the hover covers the element name');
});

/** Apply LSP text edits to a text (edits do not overlap; applied back to front). */
function applyEdits(text: string, edits: TextEdit[]): string {
  const lines = text.split('\n');
  const offset = (p: { line: number; character: number }) =>
    lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
  return [...edits]
    .sort((a, b) => offset(b.range.start) - offset(a.range.start))
    .reduce((t, e) => t.slice(0, offset(e.range.start)) + e.newText + t.slice(offset(e.range.end)), text);
}

test('the QF020 quick fix adds a <q:timeout>, and the re-check clears QF020', async () => {
  const file = path.join(SAMPLES, 'broken', 'QF020-channel-no-timeout.bpmn');
  const { uri, text } = session.open(file);
  const diags = await session.diagnostics(uri, 1);
  const qf020 = diags.find((d) => d.code === 'QF020');
  assert.ok(qf020, 'QF020 published');
  const actions: CodeAction[] = await session.connection.sendRequest('textDocument/codeAction', {
    textDocument: { uri },
    range: qf020.range,
    context: { diagnostics: [qf020], only: ['quickfix'] },
  });
  const fix = actions.find((a) => a.kind === 'quickfix' && (a.diagnostics ?? []).some((d) => d.code === 'QF020'));
  assert.ok(fix, `a quick fix for QF020; got ${actions.map((a) => a.title).join(' | ')}`);
  const edits = fix.edit?.changes?.[uri] ?? [];
  assert.ok(edits.length > 0, 'the fix edits the model');
  const fixed = applyEdits(text, edits);
  assert.match(fixed, /<q:timeout duration="PT\d+[SM]"\/>/);
  await session.connection.sendNotification('textDocument/didChange', {
    textDocument: { uri, version: 2 },
    contentChanges: [{ text: fixed }],
  });
  const after = await session.diagnostics(uri, 2);
  assert.deepEqual(
    after.filter((d) => d.code === 'QF020'),
    [],
    'QF020 is gone after the fix',
  );
  assert.deepEqual(
    after.filter((d) => d.severity === 1),
    [],
    'and the fixed model has no error',
  );
});
