// The status bar item in each state of the server.

import * as assert from 'node:assert/strict';
import { test } from 'node:test';

import { statusView } from '../src/status';

test('starting, running, stopped and not found each say so, and a click does the useful thing', () => {
  assert.deepEqual(statusView({ kind: 'starting', binary: '/b/qflow' }), {
    text: '$(sync~spin) qflow',
    tooltip: 'qflow: starting /b/qflow lsp…',
    command: 'qflow.showOutput',
  });
  const running = statusView({ kind: 'running', binary: '/b/qflow', detail: 'found on PATH' });
  assert.equal(running.text, '$(check) qflow');
  assert.match(running.tooltip, /running: \/b\/qflow \(found on PATH\)/);
  assert.equal(running.alarm, undefined);
  const stopped = statusView({ kind: 'stopped', binary: '/b/qflow', reason: 'exited with code 2' });
  assert.equal(stopped.text, '$(error) qflow');
  assert.match(stopped.tooltip, /stopped: exited with code 2\. Click to restart/);
  assert.equal(stopped.command, 'qflow.restartServer');
  assert.equal(stopped.alarm, 'error');
  const missing = statusView({ kind: 'not-found', message: 'qflow: cannot find the qflow binary.' });
  assert.equal(missing.text, '$(warning) qflow: no server');
  assert.equal(missing.command, 'qflow.openSettings');
  assert.equal(missing.alarm, 'warning');
});
