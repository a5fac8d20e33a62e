// The link of a diagnostic code: the command link VS Code's opener runs, and
// the page document it opens.

import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { codeOfPage, explainArgv, explainLink, isCode, pageUri } from '../src/explain';

test('a code links to qflow.explain with the code as its one argument', () => {
  const link = explainLink('QF022');
  assert.equal(link, 'command:qflow.explain?%5B%22QF022%22%5D');
  const [, query] = link.split('?');
  assert.deepEqual(JSON.parse(decodeURIComponent(query)), ['QF022']);
});

test('only qflow codes are linked; a page document names its code', () => {
  assert.ok(isCode('QF022'));
  for (const other of ['qf022', 'QF22', 'E0001', 22, undefined]) {
    assert.equal(isCode(other), false, String(other));
  }
  assert.equal(pageUri('QF107'), 'qflow-explain:QF107.md');
  assert.equal(codeOfPage('QF107.md'), 'QF107');
  assert.equal(codeOfPage('/QF107.md'), 'QF107');
  assert.equal(codeOfPage('../etc/passwd'), undefined);
  assert.deepEqual(explainArgv('QF107'), ['explain', 'QF107']);
});
