// qflow: Show Diagram, against the real `qflow lsp` (started through the
// extension's own serverOptions, spoken to with vscode-jsonrpc): the
// `qflow/diagram` request draws the model with its verdict marked on the
// element it is about, the panel shows that drawing, a click on an element
// reveals its id in the text, and an edit redraws it.

import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as os from 'node:os';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';

import {
  DiagramPanel,
  instanceChoices,
  instanceRenderArgv,
  instancesArgv,
  page,
  type DiagramResult,
  type Host,
  type Range,
} from '../src/diagram';
import { startServer, type Server } from './lsp';
import { REPO, SAMPLES, qflowBinary } from './support';

let server: Server;

before(async () => {
  server = await startServer();
});

after(() => server.stop());

function open(file: string, text?: string): string {
  return server.open(file, text);
}

function change(uri: string, text: string): void {
  server.change(uri, text);
}

function draw(uri: string): Promise<DiagramResult | null> {
  return server.draw(uri);
}

/** The opening tag of the group the SVG draws for element `id`. */
function groupOf(svg: string, id: string): string {
  const m = svg.match(new RegExp(`<g class="[^"]*" data-id="${id}"[^>]*>(<title>[^<]*</title>)?`));
  assert.ok(m, `no group for ${id} in the SVG; stderr: ${server.stderr()}`);
  return m[0];
}

/** A recording host: the panel's HTML, and what was revealed where. */
function recordingHost(): { host: Host; revealed: Array<{ uri: string; range: Range }>; webview: { html: string }; click(id: string): void } {
  const listeners: Array<(m: unknown) => void> = [];
  const webview = {
    html: '',
    cspSource: 'vscode-webview:',
    onDidReceiveMessage: (l: (m: unknown) => void) => (listeners.push(l), { dispose() {} }),
  };
  const revealed: Array<{ uri: string; range: Range }> = [];
  return {
    host: {
      request: (u) => draw(u),
      createPanel: (title) => ({ webview, onDidDispose() {}, title }),
      reveal: (uri, range) => void revealed.push({ uri, range }),
    },
    revealed,
    webview,
    click: (id) => listeners.forEach((l) => l({ type: 'reveal', id })),
  };
}

test('qflow/diagram draws the model with its verdict marked on the element it is about', async () => {
  const file = path.join(SAMPLES, 'broken', 'QF020-channel-no-timeout.bpmn');
  const uri = open(file);
  const r = await draw(uri);
  assert.ok(r, `a drawing; stderr: ${server.stderr()}`);
  assert.equal(r.process, 'p');
  assert.match(r.svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  // The channel call without a timeout carries its error, and its message.
  const call = groupOf(r.svg, 'authorize');
  assert.match(call, /class="node call finding finding-error"/);
  assert.match(call, /<title>QF020 [^<]*timeout/);
  assert.ok(r.marked >= 1);
  // The others carry no error (the start event only bpmnlint's hint that it
  // has no label), and a flow with no verdict is drawn plain.
  assert.doesNotMatch(groupOf(r.svg, 'start'), /finding-error/);
  assert.match(groupOf(r.svg, 'start'), /finding-hint/);
  assert.doesNotMatch(groupOf(r.svg, 'f1'), /finding/);
  // Every node and flow is there with its place in the text.
  assert.deepEqual(r.elements.map((e) => e.id).sort(), ['authorize', 'end', 'f1', 'f2', 'start']);
  const text = fs.readFileSync(file, 'utf8').split('\n');
  const sel = r.elements.find((e) => e.id === 'authorize')!.selectionRange;
  assert.equal(text[sel.start.line].slice(sel.start.character, sel.end.character), 'authorize');
});

test('the panel shows the drawing, reveals a clicked element in the text, and redraws as the text changes', async () => {
  const file = path.join(SAMPLES, 'run-boundaries.bpmn');
  const source = fs.readFileSync(file, 'utf8');
  const uri = open(file, source);
  const rec = recordingHost();
  const panel = new DiagramPanel(rec.host, uri, 'Diagram: run-boundaries.bpmn');
  await panel.update();
  assert.match(rec.webview.html, /<svg [^>]*class="qflow-diagram" data-process="pay"/);
  // Its modelling hints (events without labels) are marked; no error is.
  assert.match(rec.webview.html, /process pay · \d+ findings marked/);
  assert.doesNotMatch(panel.result!.svg, /class="[^"]*finding-error/);
  assert.match(rec.webview.html, /Content-Security-Policy" content="default-src 'none'/);
  assert.match(rec.webview.html, /postMessage\(\{ type: 'reveal'/);

  // A click on the timer boundary puts the cursor on its id in the text.
  rec.click('tooLong');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(rec.revealed.length, 1);
  const { range } = rec.revealed[0];
  const lines = source.split('\n');
  assert.equal(lines[range.start.line].slice(range.start.character, range.end.character), 'tooLong');
  assert.match(lines[range.start.line], /<bpmn:boundaryEvent id="tooLong"/);
  // A click on something that is not an element reveals nothing.
  rec.click('no-such-id');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(rec.revealed.length, 1);

  // Typing: a new name is drawn; a channel call without a timeout is marked.
  change(uri, source.replace('name="Charge"', 'name="Charge the card"'));
  await panel.update();
  assert.match(rec.webview.html, /Charge the/);
  assert.doesNotMatch(rec.webview.html, />Charge<\/tspan>/);
  change(uri, source.replace('q:task="mail.declined"', 'q:channel="mail"'));
  await panel.update();
  assert.match(groupOf(panel.result!.svg, 'tellCustomer'), /finding-error/);
  assert.match(groupOf(panel.result!.svg, 'tellCustomer'), /<title>QF020 /);

  // Text that does not parse keeps the last drawing, and says so.
  change(uri, '<bpmn:definitions');
  await panel.update();
  assert.match(rec.webview.html, /the text does not parse: the last drawing is shown/);
  assert.match(rec.webview.html, /data-process="pay"/);
});

test('verdicts on no element drawn are counted and said beside the drawing (a flow whose reference dangles is not drawn)', async () => {
  const file = path.join(SAMPLES, 'dbg08-long-outage.bpmn');
  const source = fs.readFileSync(file, 'utf8');
  const uri = open(file, source);
  const before = await draw(uri);
  assert.ok(before, `a drawing; stderr: ${server.stderr()}`);
  assert.equal(typeof before.unmarked, 'number');
  // The task's id typed over: both flows now name an id that is not there.
  change(uri, source.replace('id="charge"', 'id="chargeX"'));
  const after = await draw(uri);
  assert.ok(after);
  assert.deepEqual(
    after.elements.map((e) => e.id).filter((id) => id === 'f1' || id === 'f2'),
    ['f1', 'f2'],
    'the flows are in the text',
  );
  assert.doesNotMatch(after.svg, /data-id="f[12]"/, 'but not drawn');
  assert.ok(after.unmarked! >= before.unmarked! + 2, `${before.unmarked} then ${after.unmarked}`);
  const html = page(after, 'x');
  assert.match(html, new RegExp(`· ${after.unmarked} more on no element drawn \\(in the Problems panel\\)`));
  // None to say: nothing said.
  assert.doesNotMatch(page({ ...after, unmarked: 0 }, 'x'), /on no element drawn/);
  // The text as on disk again, for the tests after this one.
  change(uri, source);
  await draw(uri);
});

test('the page offers the drawing at its own size beside fitted to the width, the choice kept across redraws', () => {
  const drawn: DiagramResult = { version: 1, process: 'p', processes: ['p'], svg: '<svg class="qflow-diagram"></svg>', elements: [], marked: 0 };
  const html = page(drawn, 'x');
  // Fitted by default; the button switches, the webview's state remembers it.
  assert.match(html, /\.qflow-diagram\{max-width:100%;height:auto\}/);
  assert.match(html, /body\.actual \.qflow-diagram\{max-width:none\}/);
  assert.match(html, /<button id="zoom" class="zoom" type="button">actual size<\/button>/);
  assert.match(html, /sized\(!!\(vscode\.getState\(\) \|\| \{\}\)\.actual\)/);
  assert.match(html, /vscode\.setState\(\{ actual \}\)/);
  // Nothing to draw: nothing to size.
  assert.doesNotMatch(page(null, 'x'), /<button/);
});

test('the page escapes what it writes itself and shows a message when there is nothing to draw', () => {
  assert.match(page(null, 'x', 'a <b> & "c"'), /a &lt;b&gt; &amp; &quot;c&quot;/);
});

test('with a database, an instance is picked from it and its state drawn on the diagram', async () => {
  const bin = qflowBinary();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-diagram-'));
  const db = path.join(dir, 'run.db');
  // One FAILED instance of the long outage (its scenario beside the model).
  execFileSync(bin, ['run', path.join(SAMPLES, 'dbg08-long-outage.bpmn'), '--db', db], { cwd: REPO, stdio: 'pipe' });
  const choices = instanceChoices(execFileSync(bin, instancesArgv(db), { cwd: REPO, encoding: 'utf8' }), 'dbg08');
  assert.deepEqual(
    choices.map((c) => [c.instance, c.status]),
    [['dbg08-1', 'failed']],
  );
  assert.match(choices[0].detail, /FAILED at charge PROVIDER_DOWN/);
  assert.deepEqual(instanceChoices(execFileSync(bin, instancesArgv(db), { cwd: REPO, encoding: 'utf8' }), 'other'), []);

  const file = path.join(SAMPLES, 'dbg08-long-outage.bpmn');
  const uri = open(file);
  const rec = recordingHost();
  rec.host.renderInstance = async (u, instance) =>
    execFileSync(bin, instanceRenderArgv(new URL(u).pathname, instance, db), { cwd: REPO, encoding: 'utf8' });
  const panel = new DiagramPanel(rec.host, uri, 'Diagram: dbg08-long-outage.bpmn');
  await panel.showInstance('dbg08-1');
  assert.match(rec.webview.html, /data-instance="dbg08-1" data-status="failed"/);
  assert.match(rec.webview.html, /<g class="node task failed[^"]*" data-id="charge"/);
  assert.match(rec.webview.html, /instance dbg08-1, its state read from the database/);
  // A click still reveals the element in the text.
  rec.click('charge');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(rec.revealed.length, 1);
  // Back to the text's verdicts.
  await panel.showInstance(undefined);
  assert.doesNotMatch(rec.webview.html, /data-instance=/);
  // An instance the database does not hold is said, not drawn.
  await panel.showInstance('dbg08-99');
  assert.match(rec.webview.html, /instance dbg08-99 could not be drawn: [^<]*dbg08-99/);
  fs.rmSync(dir, { recursive: true, force: true });
});
