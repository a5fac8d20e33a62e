// The extension activated against the recording stand-in for `vscode`: what
// a user sees on activation, when no server is found, and from each command.
// Check Workspace runs the real `qflow check` on the samples.

import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { EXTENSION, REPO, SAMPLES, modelsUnder, qflowBinary } from './support';
import { Uri, activate, follow } from './vscode-stub';

const OUT = path.join(EXTENSION, 'out', 'src', 'extension.js');
const BUNDLE = path.join(EXTENSION, 'dist', 'extension.js');
const manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION, 'package.json'), 'utf8')) as {
  main: string;
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
  contributes: { commands: Array<{ command: string; title: string }>; configuration: { properties: { [k: string]: unknown } } };
};

/** A PATH with nothing on it, so only what a test sets up is found. */
function withEmptyPath<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.env.PATH;
  process.env.PATH = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-empty-path-'));
  return fn().finally(() => (process.env.PATH = saved));
}

test('the manifest: the bundle is the entry point, .bpmn activates it, every command and setting is contributed', () => {
  assert.equal(manifest.main, './dist/extension.js');
  assert.ok(manifest.activationEvents.includes('onLanguage:bpmn'));
  assert.deepEqual(manifest.contributes.commands.map((c) => c.command).sort(), [
    'qflow.checkWorkspace',
    'qflow.openInConsole',
    'qflow.restartServer',
    'qflow.runModel',
    'qflow.showDiagram',
    'qflow.showInstanceOnDiagram',
    'qflow.showOutput',
  ]);
  assert.deepEqual(Object.keys(manifest.contributes.configuration.properties).sort(), ['qflow.database', 'qflow.path', 'qflow.trace.server']);
  // A workspace may not pick the binary the extension executes unless the user trusts it.
  assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations, ['qflow.path']);
});

test('activation registers every contributed command and starts `qflow lsp` from qflow.path', async () => {
  const bin = qflowBinary();
  const { rec } = await activate(OUT, { settings: { 'qflow.path': bin }, workspaceFolders: ['/ws'] });
  for (const c of manifest.contributes.commands) {
    assert.ok(rec.commands.has(c.command), `${c.command} is registered`);
  }
  assert.equal(rec.clients.length, 1);
  const client = rec.clients[0];
  assert.equal(client.id, 'qflow', 'the client id makes `qflow.trace.server` the trace setting');
  assert.ok(client.started);
  assert.equal(client.serverOptions.run.command, bin);
  assert.deepEqual(client.serverOptions.run.args, ['lsp']);
  assert.equal(client.serverOptions.run.transport, 0);
  assert.equal(client.serverOptions.run.options.cwd, '/ws');
  assert.deepEqual(client.clientOptions.documentSelector, [
    { scheme: 'file', language: 'bpmn' },
    { scheme: 'untitled', language: 'bpmn' },
  ]);
  assert.ok(client.clientOptions.outputChannel, 'the server log goes to the qflow output channel');
  assert.equal(rec.status.text, '$(check) qflow');
  assert.match(rec.status.tooltip, /from the qflow\.path setting/);
  assert.ok(rec.status.shown);
  assert.ok(rec.log.some((l) => l.includes(`starting ${bin} lsp`)));
});

test('no server anywhere: an error that says how to fix it, whose button opens the setting', async () => {
  await withEmptyPath(async () => {
    const { rec } = await activate(OUT, { clicks: ['Open Settings'] });
    assert.equal(rec.clients.length, 0);
    const [error] = rec.messages;
    assert.equal(error.level, 'error');
    assert.match(error.text, /cannot find the qflow binary/);
    assert.match(error.text, /cargo build --release/);
    assert.deepEqual(error.buttons, ['Open Settings']);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(rec.executed, [['workbench.action.openSettings', 'qflow.path']]);
    assert.equal(rec.status.text, '$(warning) qflow: no server');
    assert.equal(rec.status.command, 'qflow.openSettings');
  });
});

test('a wrong qflow.path is named in the error, not skipped for another binary', async () => {
  const { rec } = await activate(OUT, { settings: { 'qflow.path': '/opt/nowhere/qflow' } });
  assert.equal(rec.clients.length, 0);
  assert.match(rec.messages[0].text, /"qflow\.path" setting is "\/opt\/nowhere\/qflow"/);
  assert.deepEqual(rec.messages[0].buttons, ['Open Settings']);
});

test('an untrusted workspace does not run its own build; trusting it starts the server', async () => {
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-ws-'));
  fs.mkdirSync(path.join(ws, 'target', 'debug'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'target', 'debug', 'qflow'), '#!/bin/sh\n', { mode: 0o755 });
  await withEmptyPath(async () => {
    const { rec } = await activate(OUT, { workspaceFolders: [ws], trusted: false });
    assert.equal(rec.clients.length, 0);
    assert.match(rec.messages[0].text, /not trusted/);
    rec.trustListeners[0]();
    await new Promise((r) => setTimeout(r, 10));
    // The stand-in's trust flag is fixed at activation, so the retry still finds nothing: what matters is that it retried.
    assert.equal(rec.messages.length, 2);
  });
  await withEmptyPath(async () => {
    const { rec } = await activate(OUT, { workspaceFolders: [ws], trusted: true });
    assert.equal(rec.clients[0].serverOptions.run.command, path.join(ws, 'target', 'debug', 'qflow'));
    assert.match(rec.status.tooltip, /a build in the workspace/);
  });
});

test('a platform package runs its bundled binary, made executable if the zip lost the bit', async () => {
  const ext = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-ext-'));
  fs.mkdirSync(path.join(ext, 'bin'));
  const bundled = path.join(ext, 'bin', 'qflow');
  fs.writeFileSync(bundled, '#!/bin/sh\n', { mode: 0o644 });
  await withEmptyPath(async () => {
    const { rec } = await activate(OUT, {}, ext);
    assert.equal(rec.clients[0].serverOptions.run.command, bundled);
    assert.match(rec.status.tooltip, /bundled with the extension/);
    assert.equal(fs.statSync(bundled).mode & 0o111, 0o111);
  });
});

test('a server that does not start: the status says stopped, the error offers the log', async () => {
  const { rec } = await activate(OUT, { settings: { 'qflow.path': qflowBinary() }, startFails: 'spawn EACCES' });
  assert.equal(rec.status.text, '$(error) qflow');
  assert.equal(rec.status.command, 'qflow.restartServer');
  assert.match(rec.messages[0].text, /lsp did not start: spawn EACCES/);
  assert.deepEqual(rec.messages[0].buttons, ['Show Log', 'Open Settings']);
});

test('Restart Server stops the client and starts a new one; changing qflow.path restarts too', async () => {
  const { rec } = await activate(OUT, { settings: { 'qflow.path': qflowBinary() } });
  await rec.commands.get('qflow.restartServer')!();
  assert.equal(rec.clients.length, 2);
  assert.ok(rec.clients[0].stopped && !rec.clients[1].stopped && rec.clients[1].started);
  rec.configListeners[0]({ affectsConfiguration: (s) => s === 'qflow.path' });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(rec.clients.length, 3);
  rec.configListeners[0]({ affectsConfiguration: () => false });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(rec.clients.length, 3, 'other settings do not restart the server');
});

test('Open in Console types `qflow console MODEL` and leaves the scenario beside the model to qflow', async () => {
  const bin = qflowBinary();
  const model = path.join(SAMPLES, 'dbg08-long-outage.bpmn');
  const { rec } = await activate(OUT, { settings: { 'qflow.path': bin }, workspaceFolders: [path.dirname(SAMPLES)], activeFile: Uri.file(model) });
  await rec.commands.get('qflow.openInConsole')!();
  assert.equal(rec.terminals.length, 1);
  assert.equal(rec.terminals[0].name, 'qflow console: dbg08-long-outage.bpmn');
  assert.equal(rec.terminals[0].cwd, path.dirname(SAMPLES));
  assert.ok(rec.terminals[0].shown);
  assert.deepEqual(rec.terminals[0].sent, [`${bin} console ${model}`]);
  // From the explorer, on a model with no scenario beside it.
  const plain = path.join(SAMPLES, 'dbg08-charge.bpmn');
  await rec.commands.get('qflow.openInConsole')!(Uri.file(plain));
  assert.deepEqual(rec.terminals[1].sent, [`${bin} console ${plain}`]);
});

test('Open in Console on an unsaved model asks to save it first', async () => {
  const { rec } = await activate(OUT, { settings: { 'qflow.path': qflowBinary() }, activeFile: Uri.untitled('Untitled-1') });
  await rec.commands.get('qflow.openInConsole')!();
  assert.equal(rec.terminals.length, 0);
  assert.match(rec.messages[0].text, /save the model to a file first/);
});

test('Run Model types `qflow run MODEL` in one reused terminal', async () => {
  const bin = qflowBinary();
  const model = path.join(SAMPLES, 'run-order-retry.bpmn');
  const { rec } = await activate(OUT, { settings: { 'qflow.path': bin }, activeFile: Uri.file(model) });
  await rec.commands.get('qflow.runModel')!();
  await rec.commands.get('qflow.runModel')!(Uri.file(path.join(SAMPLES, 'dbg08-long-outage.bpmn')));
  assert.equal(rec.terminals.length, 1);
  assert.equal(rec.terminals[0].name, 'qflow run');
  assert.deepEqual(rec.terminals[0].sent, [
    `${bin} run ${model}`,
    `${bin} run ${path.join(SAMPLES, 'dbg08-long-outage.bpmn')}`,
  ]);
});

test('Check Workspace puts every model’s verdicts in the Problems panel (the real qflow check)', async () => {
  const files = modelsUnder(SAMPLES);
  const open = path.join(SAMPLES, 'broken', 'QF020-channel-no-timeout.bpmn');
  const { rec } = await activate(OUT, {
    settings: { 'qflow.path': qflowBinary() },
    files,
    // The server already publishes for an open model: Check Workspace leaves it to the server.
    openDocuments: [{ uri: Uri.file(open), languageId: 'bpmn' }],
  });
  await rec.commands.get('qflow.checkWorkspace')!();
  const codesOf = (f: string) => (rec.problems.get(path.join(SAMPLES, 'broken', f)) ?? []).map((d) => d.code);
  // The dialect's own verdicts (QF001-QF099); the modelling rules (QF100 upward) add their
  // own findings, such as label-required hints, which this test does not pin.
  const dialect = (c: unknown) => Number((c as { value: string }).value.slice(2)) < 100;
  assert.deepEqual(
    codesOf('QF022-retry-beside-routed-timer.bpmn')
      .filter(dialect)
      .map((c) => (c as { value: string }).value),
    ['QF022', 'QF040'], // root causes first: the error before the note
  );
  const qf022 = rec.problems
    .get(path.join(SAMPLES, 'broken', 'QF022-retry-beside-routed-timer.bpmn'))!
    .find((d) => (d.code as { value: string }).value === 'QF022')!;
  assert.equal(qf022.severity, 0 /* Error */);
  assert.equal(qf022.source, 'qflow');
  assert.deepEqual([qf022.range.start.line, qf022.range.start.character, qf022.range.end.character], [9, 9, 16]);
  // Its code links to the page, offline: the qflow.explain command.
  assert.equal(String((qf022.code as { target: Uri }).target), 'command:qflow.explain?%5B%22QF022%22%5D');
  assert.equal(rec.problems.has(open), false, 'an open model is left to the server');
  for (const code of ['QF001', 'QF004', 'QF012']) {
    assert.ok(
      [...rec.problems.values()].some((ds) => ds.some((d) => (d.code as { value: string }).value === code)),
      `${code} is in the Problems panel`,
    );
  }
  const summary = rec.messages.find((m) => m.level === 'info');
  assert.match(summary?.text ?? '', new RegExp(`^qflow: checked ${files.length} models: \\d+ errors, \\d+ warnings, \\d+ notes\\.$`));
  assert.deepEqual(rec.executed.at(-1), ['workbench.actions.view.problems']);
  // Opening a checked model: the server's first verdict on it replaces the check's.
  const qf022File = path.join(SAMPLES, 'broken', 'QF022-retry-beside-routed-timer.bpmn');
  rec.documents.push({ uri: Uri.file(qf022File), languageId: 'bpmn', isDirty: false, save: async () => true });
  const forwarded: unknown[] = [];
  rec.clients[0].clientOptions.middleware.handleDiagnostics(Uri.file(qf022File), ['from the server'], (_u, ds) => forwarded.push(...ds));
  assert.deepEqual(forwarded, ['from the server']);
  assert.equal(rec.problems.has(qf022File), false);
  assert.ok(rec.problems.has(path.join(SAMPLES, 'broken', 'QF012-unbounded-retry.bpmn')), 'models still closed keep the check verdicts');
});

test('Check Workspace with a binary that is not qflow says what went wrong', async () => {
  const fake = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-fake-')), 'qflow');
  fs.writeFileSync(fake, '#!/bin/sh\necho "not json"\n', { mode: 0o755 });
  const { rec } = await activate(OUT, { settings: { 'qflow.path': fake }, files: [path.join(SAMPLES, 'dbg08-charge.bpmn')] });
  await rec.commands.get('qflow.checkWorkspace')!();
  const error = rec.messages.find((m) => m.level === 'error');
  assert.match(error?.text ?? '', /Check Workspace failed: qflow check did not print JSON[\s\S]*it printed: not json$/);
});

test('the shipped bundle (dist/extension.js) loads and registers the same commands', async () => {
  await withEmptyPath(async () => {
    const { rec } = await activate(BUNDLE, {});
    assert.deepEqual([...rec.commands.keys()].sort(), [...manifest.contributes.commands.map((c) => c.command), 'qflow.openSettings', 'qflow.explain'].sort());
    assert.equal(rec.status.text, '$(warning) qflow: no server');
  });
});

test('following a diagnostic’s link opens its page in a preview, printed by the real qflow explain, offline', async () => {
  const { rec } = await activate(OUT, { settings: { 'qflow.path': qflowBinary() } });
  // What vscode-languageclient hands the middleware for the server's QF022:
  // its codeDescription (the page as a file: URI) as the code's target.
  const fromServer = {
    message: 'retry never fires',
    source: 'qflow',
    code: { value: 'QF022', target: Uri.parse('file:///home/u/.cache/qflow/0.1.0/diagnostics/QF022.md') },
  };
  const shown: Array<{ code: { value: string; target: Uri } }> = [];
  rec.clients[0].clientOptions.middleware.handleDiagnostics(Uri.file('/w/m.bpmn'), [fromServer], (_u, ds) =>
    shown.push(...(ds as typeof shown)),
  );
  assert.equal(shown[0].code.value, 'QF022');
  const link = shown[0].code.target.toString();
  assert.equal(link, 'command:qflow.explain?%5B%22QF022%22%5D');
  // The user clicks QF022 in the Problems panel.
  await follow(rec, link);
  const preview = rec.executed.find(([id]) => id === 'markdown.showPreview');
  assert.ok(preview, `a Markdown preview is opened: ${JSON.stringify(rec.executed)}`);
  const page = preview[1] as Uri;
  assert.equal(page.scheme, 'qflow-explain');
  const provider = rec.contentProviders.get('qflow-explain');
  assert.ok(provider, 'the page documents are provided');
  const text = await provider.provideTextDocumentContent(page);
  assert.equal(text, fs.readFileSync(path.join(REPO, 'docs', 'diagnostics', 'QF022.md'), 'utf8'), 'the page, as docs/ holds it');
  // A code the binary does not know: the page says so and how to go on.
  const unknown = await provider.provideTextDocumentContent(Uri.parse('qflow-explain:QF999.md'));
  assert.match(unknown, /could not be read from qflow.*no diagnostic code/s);
  assert.match(unknown, /qflow explain QF999/);
});

test('a link with no binary to print the page says how to fix it', async () => {
  await withEmptyPath(async () => {
    const { rec } = await activate(OUT, {});
    const text = await rec.contentProviders.get('qflow-explain')!.provideTextDocumentContent(Uri.parse('qflow-explain:QF022.md'));
    assert.match(text, /^# QF022\n/);
    assert.match(text, /cannot find the qflow binary/);
  });
});
