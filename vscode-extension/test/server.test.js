'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { resolveBinary, serverCommand, consoleCommandLine, quote, EXE } = require('../src/server');

const existsIn = (set) => (p) => set.has(p);

test('an explicit qflow.path setting wins over PATH and workspace builds', () => {
  const found = resolveBinary({
    configuredPath: ' /opt/qflow/bin/qflow ',
    workspaceFolders: ['/ws'],
    envPath: '/usr/bin',
    exists: existsIn(new Set([path.join('/usr/bin', EXE), path.join('/ws', 'target', 'debug', EXE)])),
  });
  assert.equal(found, '/opt/qflow/bin/qflow');
});

test('PATH is searched in order before workspace builds', () => {
  const found = resolveBinary({
    configuredPath: '',
    workspaceFolders: ['/ws'],
    envPath: ['/a', '/b'].join(path.delimiter),
    exists: existsIn(new Set([path.join('/b', EXE), path.join('/ws', 'target', 'debug', EXE)])),
  });
  assert.equal(found, path.join('/b', EXE));
});

test('a workspace release build is preferred to a debug build', () => {
  const found = resolveBinary({
    workspaceFolders: ['/ws'],
    envPath: '',
    exists: existsIn(new Set([path.join('/ws', 'target', 'debug', EXE), path.join('/ws', 'target', 'release', EXE)])),
  });
  assert.equal(found, path.join('/ws', 'target', 'release', EXE));
});

test('nothing found is null, so the extension can explain how to fix it', () => {
  assert.equal(resolveBinary({ workspaceFolders: ['/ws'], envPath: '/usr/bin', exists: () => false }), null);
});

test('the server is `qflow lsp` on stdio', () => {
  assert.deepEqual(serverCommand('/x/qflow'), { command: '/x/qflow', args: ['lsp'] });
});

test('console command lines quote paths with spaces and quotes', () => {
  assert.equal(
    consoleCommandLine('/usr/bin/qflow', "/home/me/My Models/o'brien.bpmn", undefined, 'linux'),
    "/usr/bin/qflow console '/home/me/My Models/o'\\''brien.bpmn'",
  );
  assert.equal(
    consoleCommandLine('/q', '/m.bpmn', '/s.json', 'linux'),
    '/q console /m.bpmn --scenario /s.json',
  );
  assert.equal(quote("C:\\a b\\it's", 'win32'), "'C:\\a b\\it''s'");
  assert.equal(consoleCommandLine('C:\\q.exe', 'C:\\m.bpmn', undefined, 'win32'), "& 'C:\\q.exe' 'console' 'C:\\m.bpmn'");
});
