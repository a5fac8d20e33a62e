// The studio's commands: terminal command lines (the scenario is qflow's to find), and
// `qflow check --format json` turned into the diagnostics the server would publish.

import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';

import {
  batches,
  checkArgv,
  checkSummary,
  checkToDiagnostics,
  commandLine,
  consoleArgs,
  parseCheckOutput,
  positionAt,
  quote,
  runArgs,
  type CheckEntry,
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
  assert.deepEqual(checkArgv(['/a.bpmn', '/b.bpmn']), ['check', '--format', 'json', '/a.bpmn', '/b.bpmn']);
  assert.deepEqual(
    batches([1, 2, 3, 4, 5], 2),
    [[1, 2], [3, 4], [5]],
  );
  assert.deepEqual(batches([], 2), []);
});

test('output that is not JSON is an error that shows it', () => {
  assert.throws(() => parseCheckOutput('error: unexpected argument'), /did not print JSON.*it printed: error: unexpected argument/);
  assert.throws(() => parseCheckOutput(''), /it printed: \(nothing\)/);
  assert.throws(() => parseCheckOutput('{}'), /other than an array/);
  assert.deepEqual(parseCheckOutput('[]'), []);
});

test('byte offsets become LSP positions: UTF-16 columns, CRLF, offsets inside a character', () => {
  const text = Buffer.from('ab\r\nxé𝄞z\n', 'utf8');
  assert.deepEqual(positionAt(text, 0), { line: 0, character: 0 });
  assert.deepEqual(positionAt(text, 2), { line: 0, character: 2 }); // before \r
  assert.deepEqual(positionAt(text, 3), { line: 0, character: 2 }); // \r belongs to the break
  assert.deepEqual(positionAt(text, 4), { line: 1, character: 0 });
  assert.deepEqual(positionAt(text, 5), { line: 1, character: 1 }); // before é (2 bytes)
  assert.deepEqual(positionAt(text, 6), { line: 1, character: 1 }); // inside é: back to its start
  assert.deepEqual(positionAt(text, 7), { line: 1, character: 2 }); // before 𝄞 (4 bytes, 2 UTF-16 units)
  assert.deepEqual(positionAt(text, 11), { line: 1, character: 4 });
  assert.deepEqual(positionAt(text, 999), { line: 2, character: 0 });
});

test('check entries become the diagnostics the server publishes', () => {
  const file = '/w/m.bpmn';
  const other = '/w/n.bpmn';
  const texts: Record<string, Buffer> = {
    [file]: Buffer.from('<a>\n  <q:retry x="é"/>\n'),
    [other]: Buffer.from('<b/>\n'),
  };
  const entries: CheckEntry[] = [
    {
      code: 'QF022',
      severity: 'error',
      message: 'retry never fires',
      help: 'remove the timer',
      url: 'https://example.invalid/QF022',
      path: file,
      offset: 6,
      length: 17,
      related: [{ message: 'the boundary', path: other, offset: 0, length: 4 }],
    },
    { code: 'QF033', severity: 'hint', message: 'no jitter', help: null, path: file, offset: 0, length: 3 },
  ];
  const out = checkToDiagnostics(entries, (p) => texts[p]);
  assert.deepEqual([...out.keys()], [pathToFileURL(file).href]);
  assert.deepEqual(out.get(pathToFileURL(file).href), [
    {
      range: { start: { line: 1, character: 2 }, end: { line: 1, character: 18 } },
      severity: 1,
      code: 'QF022',
      source: 'qflow',
      message: 'retry never fires\nhelp: remove the timer',
      codeDescription: { href: 'https://example.invalid/QF022' },
      relatedInformation: [
        {
          location: { uri: pathToFileURL(other).href, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 4 } } },
          message: 'the boundary',
        },
      ],
    },
    { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 3 } }, severity: 4, code: 'QF033', source: 'qflow', message: 'no jitter' },
  ]);
  assert.equal(checkSummary(2, out), 'qflow: checked 2 models: 1 error, 0 warnings, 1 note.');
});
