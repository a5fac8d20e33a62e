// Models named `*.bpmn20.xml` (the suffix Activiti and Flowable name their
// models with) are models wherever the extension looks, as `.bpmn` files
// are: the `bpmn` language claims the suffix (so the language client's
// selector, `language: 'bpmn'`, sends them to `qflow lsp`), the custom
// editor and the explorer's commands are offered on them, Check Workspace
// finds and checks them, and the scenario qflow runs them with is
// `scenarios/<stem>.json` with the stem before the whole suffix
// (`order.bpmn20.xml` runs with `scenarios/order.json`).

import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';

import { MODEL_GLOB, runArgs } from '../src/commands';
import { startServer, type Server } from './lsp';
import { EXTENSION, SAMPLES, qflowBinary } from './support';
import { Uri, activate, webviewPanel } from './vscode-stub';

const OUT = path.join(EXTENSION, 'out', 'src', 'extension.js');
const manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION, 'package.json'), 'utf8')) as {
  activationEvents: string[];
  contributes: {
    languages: Array<{ id: string; extensions: string[] }>;
    customEditors: Array<{ selector: Array<{ filenamePattern: string }> }>;
    menus: { [menu: string]: Array<{ command: string; when?: string }> };
  };
};

let server: Server;
let dir: string;
let model: string;

before(async () => {
  server = await startServer();
  // A project laid out as Flowable's are: order.bpmn20.xml, its scenario beside it.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-bpmn20-'));
  model = path.join(dir, 'order.bpmn20.xml');
  fs.copyFileSync(path.join(SAMPLES, 'dbg08-long-outage.bpmn'), model);
  fs.mkdirSync(path.join(dir, 'scenarios'));
  fs.copyFileSync(path.join(SAMPLES, 'scenarios', 'dbg08-long-outage.json'), path.join(dir, 'scenarios', 'order.json'));
});

after(async () => {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('the manifest: the bpmn language, the activation, the custom editor and the explorer commands take .bpmn20.xml', () => {
  const bpmn = manifest.contributes.languages.find((l) => l.id === 'bpmn');
  assert.deepEqual(bpmn?.extensions, ['.bpmn', '.bpmn20.xml']);
  assert.ok(manifest.activationEvents.includes('workspaceContains:**/*.bpmn20.xml'));
  assert.deepEqual(
    manifest.contributes.customEditors[0].selector.map((s) => s.filenamePattern),
    ['*.bpmn', '*.bpmn20.xml'],
  );
  // `resourceExtname` of order.bpmn20.xml is `.xml`: the explorer's commands
  // ask for the file's language instead, which the suffix gives.
  for (const item of manifest.contributes.menus['explorer/context']) {
    assert.equal(item.when, 'resourceLangId == bpmn', item.command);
  }
  assert.match(MODEL_GLOB, /\{bpmn,bpmn20\.xml\}$/);
});

test('a .bpmn20.xml model is drawn in the qflow Diagram editor and checked by Check Workspace (the real qflow)', async () => {
  server.open(model);
  const { rec } = await activate(OUT, {
    settings: { 'qflow.path': qflowBinary() },
    workspaceFolders: [dir],
    files: [model],
    request: (method, params) => server.connection.sendRequest(method, params),
  });
  const editor = rec.customEditors.get('qflow.diagram')!;
  const panel = webviewPanel('qflow.diagram');
  await editor.provider.resolveCustomTextEditor({ uri: Uri.file(model) }, panel, { isCancellationRequested: false });
  assert.match(panel.webview.html, /data-process="dbg08"/);
  assert.match(panel.webview.html, /<g class="node task[^"]*" data-id="charge"/);

  await rec.commands.get('qflow.checkWorkspace')!();
  assert.ok(rec.problems.has(model), 'the model has its verdicts in the Problems panel');
  assert.match(rec.messages.find((m) => m.level === 'info')?.text ?? '', /^qflow: checked 1 model: /);
});

test('Run Model on order.bpmn20.xml: qflow runs it with scenarios/order.json', () => {
  const [binary, ...argv] = runArgs(qflowBinary(), model);
  const run = spawnSync(binary, argv, { cwd: dir, encoding: 'utf8' });
  assert.match(run.stderr, new RegExp(`using scenario ${path.join(dir, 'scenarios', 'order.json').replace(/[.]/g, '\\.')} \\(beside the model`));
  // The scenario's outage: the charge fails for good (without it, every task succeeds).
  assert.match(run.stdout + run.stderr, /PROVIDER_DOWN/);
});
