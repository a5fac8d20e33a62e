// Finding the server: the order, the errors, the options the client gets.

import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';

import { bundledBinary, describeSource, exeName, resolveServer, serverOptions, type Resolution } from '../src/server';

const only = (...paths: string[]) => {
  const set = new Set(paths);
  return (p: string) => set.has(p);
};

const BUNDLED = bundledBinary('/ext', 'linux');
const ON_PATH = '/usr/local/bin/qflow';
const RELEASE = '/ws/target/release/qflow';
const DEBUG = '/ws/target/debug/qflow';
const EVERYWHERE = only('/opt/q/qflow', BUNDLED, ON_PATH, RELEASE, DEBUG);

function resolve(overrides: Partial<Parameters<typeof resolveServer>[0]>): Resolution {
  return resolveServer({
    extensionPath: '/ext',
    workspaceFolders: ['/ws'],
    envPath: '/usr/bin:/usr/local/bin',
    platform: 'linux',
    home: '/home/me',
    isExecutable: EVERYWHERE,
    ...overrides,
  });
}

test('the qflow.path setting wins over everything, trimmed', () => {
  assert.deepEqual(resolve({ setting: '  /opt/q/qflow ' }), { kind: 'found', binary: '/opt/q/qflow', source: 'setting' });
});

test('then the bundled binary of a platform package', () => {
  assert.equal(BUNDLED, '/ext/bin/qflow');
  assert.deepEqual(resolve({ setting: '' }), { kind: 'found', binary: BUNDLED, source: 'bundled' });
});

test('then qflow on PATH, in PATH order', () => {
  assert.deepEqual(resolve({ isExecutable: only(ON_PATH, '/usr/bin/qflow', RELEASE) }), {
    kind: 'found',
    binary: '/usr/bin/qflow',
    source: 'path',
  });
  assert.deepEqual(resolve({ isExecutable: only(ON_PATH, RELEASE) }), { kind: 'found', binary: ON_PATH, source: 'path' });
});

test('then a workspace build, release before debug, folder by folder', () => {
  assert.deepEqual(resolve({ isExecutable: only(RELEASE, DEBUG) }), { kind: 'found', binary: RELEASE, source: 'workspace' });
  assert.deepEqual(resolve({ isExecutable: only(DEBUG) }), { kind: 'found', binary: DEBUG, source: 'workspace' });
  assert.deepEqual(resolve({ workspaceFolders: ['/a', '/ws'], isExecutable: only(DEBUG, '/a/target/debug/qflow') }), {
    kind: 'found',
    binary: '/a/target/debug/qflow',
    source: 'workspace',
  });
});

test('the own build of an untrusted workspace is never run', () => {
  assert.deepEqual(resolve({ workspaceTrusted: false, isExecutable: only(ON_PATH, RELEASE) }), { kind: 'found', binary: ON_PATH, source: 'path' });
  const r = resolve({ workspaceTrusted: false, isExecutable: only(RELEASE, DEBUG) });
  assert.equal(r.kind, 'missing');
  assert.ok(r.kind === 'missing');
  assert.equal(r.searched.includes(RELEASE), false);
  assert.match(r.message, /builds inside this workspace are not run because it is not trusted/);
});

test('a qflow.path that names nothing is an error naming it, not a silent fallback', () => {
  const r = resolve({ setting: '/opt/nowhere/qflow' });
  assert.equal(r.kind, 'bad-setting');
  assert.ok(r.kind === 'bad-setting');
  assert.match(r.message, /"qflow\.path" setting is "\/opt\/nowhere\/qflow"/);
  assert.match(r.message, /not an executable file/);
});

test('qflow.path may start with ~ or be relative to the first workspace folder', () => {
  assert.deepEqual(resolve({ setting: '~/bin/qflow', isExecutable: only('/home/me/bin/qflow') }), {
    kind: 'found',
    binary: '/home/me/bin/qflow',
    source: 'setting',
  });
  assert.deepEqual(resolve({ setting: 'target/debug/qflow' }), { kind: 'found', binary: DEBUG, source: 'setting' });
});

test('nothing found: every place tried is listed and the message says how to fix it', () => {
  const r = resolve({ isExecutable: () => false });
  assert.equal(r.kind, 'missing');
  assert.ok(r.kind === 'missing');
  assert.deepEqual(r.searched, [BUNDLED, '/usr/bin/qflow', ON_PATH, RELEASE, DEBUG]);
  assert.match(r.message, /cannot find the qflow binary/);
  assert.match(r.message, /cargo build --release/);
  assert.match(r.message, /"qflow\.path"/);
});

test('windows looks for qflow.exe with ; separators', () => {
  assert.equal(exeName('win32'), 'qflow.exe');
  const r = resolveServer({ envPath: 'C:\\a;C:\\tools', platform: 'win32', isExecutable: only('C:\\tools\\qflow.exe') });
  assert.deepEqual(r, { kind: 'found', binary: 'C:\\tools\\qflow.exe', source: 'path' });
});

test('every source reads as words in the status bar', () => {
  assert.equal(describeSource('bundled'), 'bundled with the extension');
  assert.equal(describeSource('workspace'), 'a build in the workspace');
});

test('the server is `qflow lsp` over stdio, with backtraces on', () => {
  const exec = serverOptions('/x/qflow', '/ws');
  assert.equal(exec.command, '/x/qflow');
  assert.deepEqual(exec.args, ['lsp']);
  assert.equal(exec.transport, 0 /* TransportKind.stdio */);
  assert.equal(exec.options?.cwd, '/ws');
  assert.equal(exec.options?.env.RUST_BACKTRACE, '1');
  assert.equal(exec.options?.env.PATH, process.env.PATH);
  assert.equal(path.basename(exec.command), 'qflow');
});
