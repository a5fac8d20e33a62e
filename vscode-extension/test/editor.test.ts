// The "qflow Diagram" custom editor (Reopen Editor With… on a .bpmn): the
// manifest contributes it as an option beside the text editor, and the
// extension, activated against the recording stand-in for `vscode` with its
// requests answered by the real `qflow lsp`, resolves it to the engine's
// drawing, redraws it as the document changes, marks a verdict on its
// element, and reveals a clicked element in a text editor beside it. The
// Show Diagram panel on the same document is redrawn by the same change.

import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';

import { startServer, type Server } from './lsp';
import { EXTENSION, REPO, SAMPLES, qflowBinary } from './support';
import { Uri, activate, webviewPanel, type Record, type WebviewPanel } from './vscode-stub';

const OUT = path.join(EXTENSION, 'out', 'src', 'extension.js');
const manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION, 'package.json'), 'utf8')) as {
  activationEvents: string[];
  contributes: {
    customEditors?: unknown[];
    commands: Array<{ command: string; icon?: string }>;
    menus: { [menu: string]: Array<{ command: string; when?: string }> };
  };
};

let server: Server;

before(async () => {
  server = await startServer();
});

after(() => server.stop());

/** The extension activated with its language client's requests sent to the real server. */
async function studio(
  opts: {
    visibleTextEditors?: Array<{ uri: Uri; viewColumn: number }>;
    database?: string;
    picks?: Array<string | undefined>;
    clicks?: Array<string | undefined>;
  } = {},
): Promise<Record> {
  const { database, ...rest } = opts;
  const { rec } = await activate(OUT, {
    settings: { 'qflow.path': qflowBinary(), ...(database ? { 'qflow.database': database } : {}) },
    workspaceFolders: [path.dirname(SAMPLES)],
    request: (method, params) => server.connection.sendRequest(method, params),
    ...rest,
  });
  return rec;
}

/** Wait until `ok()` holds (the extension redraws and reveals asynchronously). */
async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > deadline) {
      assert.fail(`timed out waiting until ${what}; stderr: ${server.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The opening tag (and title) of the group the SVG draws for element `id`. */
function groupOf(html: string, id: string): string {
  const m = html.match(new RegExp(`<g class="[^"]*" data-id="${id}"[^>]*>(<title>[^<]*</title>)?`));
  assert.ok(m, `no group for ${id} in the page`);
  return m[0];
}

/** What the user types: the server gets the text, VS Code tells the extension. */
function type(rec: Record, uri: Uri, text: string): void {
  server.change(uri.toString(), text);
  rec.changeListeners.forEach((l) => l({ document: { uri } }));
}

/** The custom editor VS Code would open for `file`. */
async function openEditor(rec: Record, file: string): Promise<WebviewPanel> {
  const editor = rec.customEditors.get('qflow.diagram');
  assert.ok(editor, 'the extension registers the qflow.diagram custom editor');
  const uri = Uri.file(file);
  const panel = webviewPanel('qflow.diagram');
  await editor.provider.resolveCustomTextEditor({ uri }, panel, { isCancellationRequested: false });
  return panel;
}

test('the manifest offers the diagram as an editor of .bpmn files, the text editor staying the default', () => {
  assert.deepEqual(manifest.contributes.customEditors, [
    {
      viewType: 'qflow.diagram',
      displayName: 'qflow Diagram',
      selector: [{ filenamePattern: '*.bpmn' }, { filenamePattern: '*.bpmn20.xml' }],
      priority: 'option',
    },
  ]);
  assert.ok(manifest.activationEvents.includes('onCustomEditor:qflow.diagram'));
});

test('the custom editor draws the model, its verdict marked, redraws on an edit and reveals a click beside it', async () => {
  const file = path.join(SAMPLES, 'broken', 'QF020-channel-no-timeout.bpmn');
  const source = fs.readFileSync(file, 'utf8');
  server.open(file, source);
  const rec = await studio();
  assert.deepEqual(rec.customEditors.get('qflow.diagram')?.options, { supportsMultipleEditorsPerDocument: true });
  const editor = await openEditor(rec, file);

  // The engine's drawing, in a page that loads nothing from anywhere.
  assert.deepEqual(editor.webview.options, { enableScripts: true, localResourceRoots: [] });
  const html = () => editor.webview.html;
  assert.match(html(), /<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*class="qflow-diagram" data-process="p"/);
  assert.match(html(), /Content-Security-Policy" content="default-src 'none'; [^"]*script-src 'nonce-/);
  assert.doesNotMatch(html(), /<(link|img|iframe)\b|\bsrc=|@import/);
  // The channel call without a timeout is marked with its verdict.
  assert.match(groupOf(html(), 'authorize'), /class="node call finding finding-error"/);
  assert.match(groupOf(html(), 'authorize'), /<title>QF020 /);
  assert.match(html(), /process p · \d+ findings? marked/);

  // An edit: the call becomes a registered task with a name; drawn again, unmarked.
  const edited = source.replace('q:channel="bank" q:operation="authorize"', 'q:task="bank.authorize" name="Authorize"');
  type(rec, Uri.file(file), edited);
  await until('the edit is drawn', () => /Authorize</.test(html()));
  assert.doesNotMatch(groupOf(html(), 'authorize'), /finding-error/);
  assert.match(groupOf(html(), 'authorize'), /class="node task/);

  // A click on the task: a text editor of the document, beside the diagram, its id selected.
  editor.post({ type: 'reveal', id: 'authorize' });
  await until('the click is revealed', () => rec.shownText.length === 1);
  const [shown] = rec.shownText;
  assert.equal(shown.uri.fsPath, file);
  assert.equal(shown.viewColumn, -2, 'ViewColumn.Beside: no text editor shows the document');
  assert.equal(shown.preserveFocus, false);
  const sel = shown.selection!;
  assert.equal(sel.start.line, sel.end.line);
  assert.equal(edited.split('\n')[sel.start.line].slice(sel.start.character, sel.end.character), 'authorize');
  assert.match(edited.split('\n')[sel.start.line], /<bpmn:serviceTask id="authorize"/);
  // A click on what is not an element reveals nothing.
  editor.post({ type: 'reveal', id: 'nothing-here' });
  editor.post({ type: 'something else' });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(rec.shownText.length, 1);
});

test('one change redraws the custom editor and the Show Diagram panel alike; a closed editor is left alone', async () => {
  const file = path.join(SAMPLES, 'run-boundaries.bpmn');
  const source = fs.readFileSync(file, 'utf8');
  const uri = Uri.file(file);
  server.open(file, source);
  const rec = await studio({ visibleTextEditors: [{ uri, viewColumn: 1 }] });
  const editor = await openEditor(rec, file);
  await rec.commands.get('qflow.showDiagram')!(uri);
  assert.equal(rec.webviewPanels.length, 1);
  const panel = rec.webviewPanels[0];
  assert.equal(panel.viewType, 'qflow.diagramPanel', 'the panel is not the custom editor');
  assert.deepEqual(panel.webview.options, { enableScripts: true, localResourceRoots: [] });
  // The same page from the same drawing (but for the script's nonce).
  const unnonced = (h: string) => h.replace(/nonce(-|=")[A-Za-z0-9]{32}/g, 'NONCE');
  assert.equal(unnonced(editor.webview.html), unnonced(panel.webview.html));
  assert.match(editor.webview.html, /data-process="pay"/);

  type(rec, uri, source.replace('name="Charge"', 'name="Charge the card"'));
  await until('both are drawn again', () => /Charge the/.test(editor.webview.html) && /Charge the/.test(panel.webview.html));

  // A click in the editor: the text editor already showing the document.
  editor.post({ type: 'reveal', id: 'tooLong' });
  await until('the click is revealed', () => rec.shownText.length === 1);
  assert.equal(rec.shownText[0].viewColumn, 1);

  // Closed, the editor is not drawn again; the panel still is.
  editor.close();
  const before = editor.webview.html;
  type(rec, uri, source.replace('name="Charge"', 'name="Charge twice"'));
  await until('the panel is drawn again', () => /Charge twice/.test(panel.webview.html));
  assert.equal(editor.webview.html, before);
});

test('the manifest offers Show Instance on Diagram on the title bar of the qflow Diagram editor, and in the palette there', () => {
  const title = manifest.contributes.menus['editor/title'].filter((m) => m.command === 'qflow.showInstanceOnDiagram');
  assert.deepEqual(
    title.map((m) => m.when),
    ['activeCustomEditorId == qflow.diagram'],
  );
  // A title-bar button needs an icon, or it shows as words.
  assert.ok(manifest.contributes.commands.find((c) => c.command === 'qflow.showInstanceOnDiagram')?.icon);
  const palette = manifest.contributes.menus.commandPalette.find((m) => m.command === 'qflow.showInstanceOnDiagram');
  assert.match(palette?.when ?? '', /activeCustomEditorId == qflow\.diagram/);
  assert.match(palette?.when ?? '', /editorLangId == bpmn/);
});

test('Show Instance on Diagram in the qflow Diagram editor draws the picked instance there, from the palette or its title bar', async () => {
  const bin = qflowBinary();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-editor-instance-'));
  const db = path.join(dir, 'run.db');
  // One FAILED instance of the long outage (its scenario beside the model).
  execFileSync(bin, ['run', path.join(SAMPLES, 'dbg08-long-outage.bpmn'), '--db', db], { cwd: REPO, stdio: 'pipe' });
  const file = path.join(SAMPLES, 'dbg08-long-outage.bpmn');
  const uri = Uri.file(file);
  server.open(file);
  const rec = await studio({ database: db, picks: ['dbg08-1', 'dbg08-1'] });
  const editor = await openEditor(rec, file);
  assert.match(editor.webview.html, /data-process="dbg08"/);
  assert.doesNotMatch(editor.webview.html, /data-instance=/);
  // The user is in the diagram editor: no text editor is active.
  editor.active = true;

  // From the palette: no argument; the active diagram is the one drawn on.
  await rec.commands.get('qflow.showInstanceOnDiagram')!();
  assert.deepEqual(rec.quickPicks, [{ labels: ['dbg08-1'], placeHolder: 'the instance whose state to draw' }]);
  assert.match(editor.webview.html, /data-instance="dbg08-1" data-status="failed"/);
  assert.match(editor.webview.html, /<g class="node task failed[^"]*" data-id="charge"/);
  assert.match(editor.webview.html, /instance dbg08-1, its state read from the database/);
  assert.equal(rec.webviewPanels.length, 0, 'no Show Diagram panel is opened beside the editor');
  assert.deepEqual(rec.messages, []);
  // A click on the instance's drawing still reveals the element in the text.
  editor.post({ type: 'reveal', id: 'charge' });
  await until('the click is revealed', () => rec.shownText.length === 1);

  // From its title bar: VS Code passes the editor's resource.
  const second = await openEditor(rec, file);
  editor.active = false;
  second.active = true;
  await rec.commands.get('qflow.showInstanceOnDiagram')!(uri);
  assert.match(second.webview.html, /data-instance="dbg08-1"/);
  assert.equal(rec.webviewPanels.length, 0);

  // Its "the text's verdicts" button goes back to the text's drawing.
  assert.match(second.webview.html, /<button id="verdicts"[^>]*>the text's verdicts<\/button>/);
  assert.match(second.webview.html, /vscode\.postMessage\(\{ type: 'verdicts' \}\)/);
  second.post({ type: 'verdicts' });
  await until('the text is drawn again', () => !/data-instance=/.test(second.webview.html));
  assert.match(second.webview.html, /process dbg08 · (no finding on the drawing|\d+ findings? marked)/);
  assert.doesNotMatch(second.webview.html, /id="verdicts"/);
  // The other editor still shows the instance: each view has its own.
  assert.match(editor.webview.html, /data-instance="dbg08-1"/);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('Show Instance on Diagram with no database to read says so, and its button opens the qflow.database setting', async () => {
  const file = path.join(SAMPLES, 'dbg08-long-outage.bpmn');
  server.open(file);
  const missing = path.join(os.tmpdir(), `qflow-no-such-${process.pid}.db`);
  const rec = await studio({ database: missing, clicks: ['Open Settings'] });
  const editor = await openEditor(rec, file);
  editor.active = true;
  await rec.commands.get('qflow.showInstanceOnDiagram')!();
  assert.equal(rec.messages.length, 1);
  assert.equal(rec.messages[0].level, 'error');
  assert.match(rec.messages[0].text, /^qflow: no database to read instances from \(set qflow\.database/);
  assert.deepEqual(rec.messages[0].buttons, ['Open Settings']);
  assert.deepEqual(rec.executed, [['workbench.action.openSettings', 'qflow.database']]);
  assert.equal(rec.quickPicks.length, 0);
  assert.doesNotMatch(editor.webview.html, /data-instance=/);
});

test('Show Instance on Diagram on a model that does not parse says so, not that the database holds no instance', async () => {
  const file = path.join(os.tmpdir(), `qflow-unparsed-${process.pid}.bpmn`);
  server.open(file, '<bpmn:definitions');
  const rec = await studio({ database: path.join(os.tmpdir(), 'unused.db') });
  const editor = await openEditor(rec, file);
  assert.match(editor.webview.html, /no process to draw/);
  editor.active = true;
  await rec.commands.get('qflow.showInstanceOnDiagram')!();
  assert.deepEqual(
    rec.messages.map((m) => [m.level, m.text]),
    [['error', 'qflow: the model does not parse yet, so it names no process to show an instance of: fix the text first.']],
  );
  assert.equal(rec.quickPicks.length, 0);
});
