// The studio's commands: terminal command lines (the scenario is qflow's to find), and
// `qflow check --format json` turned into the diagnostics the server would publish.

import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  batches,
  checkArgv,
  checkSummary,
  commandLine,
  consoleArgs,
  parseCheckOutput,
  quote,
  runArgs,
} from '../src/commands';

test('arguments are quoted for the terminal only when they need it', () => {
  assert.equal(quote('/usr/bin/qflow', 'linux'), '/usr/bin/qflow');
  assert.equal(quote('/home/me/My Models/a.bpmn', 'linux'), `'/home/me/My Models/a.bpmn'`);
  assert.equal(quote("o'brien $HOME", 'linux'), `'o'\\''brien $HOME'`);
  assert.equal(quote("C:\\a b\\it's", 'win32'), `'C:\\a b\\it''s'`);
});

test('Open in Console types `qflow console MODEL` and leaves the scenario to qflow', () => {
  assert.equal(commandLine(consoleArgs('/b/qflow', '/w/dbg08-long-outage.bpmn'), 'linux'), '/b/qflow console /w/dbg08-long-outage.bpmn');
  assert.equal(commandLine(consoleArgs('/b/qflow', '/w/My Model.bpmn'), 'linux'), `/b/qflow console '/w/My Model.bpmn'`);
  assert.equal(commandLine(consoleArgs('C:\\q.exe', 'C:\\m.bpmn'), 'win32'), `& 'C:\\q.exe' 'console' 'C:\\m.bpmn'`);
});

test('Run Model types `qflow run MODEL` and leaves the scenario to qflow', () => {
  assert.equal(commandLine(runArgs('/b/qflow', '/w/m.bpmn'), 'linux'), '/b/qflow run /w/m.bpmn');
});

test('Check Workspace calls qflow check in batches', () => {
  assert.deepEqual(checkArgv(['/a.bpmn', '/b.bpmn']), ['check', '--format', 'lsp', '/a.bpmn', '/b.bpmn']);
  assert.deepEqual(
    batches([1, 2, 3, 4, 5], 2),
    [[1, 2], [3, 4], [5]],
  );
  assert.deepEqual(batches([], 2), []);
});

test('output that is not JSON, or not a list of {uri, diagnostics}, is an error that shows it', () => {
  assert.throws(() => parseCheckOutput('error: unexpected argument'), /did not print JSON.*it printed: error: unexpected argument/);
  assert.throws(() => parseCheckOutput(''), /it printed: \(nothing\)/);
  assert.throws(() => parseCheckOutput('{}'), /other than a list/);
  // The old `--format json` shape (an array of flat entries) is refused, not misread.
  assert.throws(() => parseCheckOutput('[{"code":"QF022","path":"/w/m.bpmn","offset":0,"length":1}]'), /other than a list/);
  assert.deepEqual(parseCheckOutput('[]'), new Map());
});

test('qflow check --format lsp output becomes the diagnostics by file, clean files included', () => {
  const qf022 = {
    range: { start: { line: 1, character: 2 }, end: { line: 1, character: 18 } },
    severity: 1,
    code: 'QF022',
    source: 'qflow',
    message: 'retry never fires\nhelp: remove the timer',
  };
  const hint = { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } }, severity: 4, code: 'QF033', source: 'qflow', message: 'no jitter' };
  const out = parseCheckOutput(
    JSON.stringify([
      { uri: 'file:///w/m.bpmn', diagnostics: [qf022, hint] },
      { uri: 'file:///w/clean.bpmn', diagnostics: [] },
    ]),
  );
  assert.deepEqual([...out.keys()], ['file:///w/m.bpmn', 'file:///w/clean.bpmn']);
  assert.deepEqual(out.get('file:///w/m.bpmn'), [qf022, hint]);
  assert.deepEqual(out.get('file:///w/clean.bpmn'), []);
  assert.equal(checkSummary(2, out), 'qflow: checked 2 models: 1 error, 0 warnings, 1 note.');
});
