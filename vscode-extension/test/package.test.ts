// What ships: `vsce ls` lists exactly the expected files, and the package
// script refuses a platform package without a proper binary. (The script
// itself opens every .vsix it builds and checks its entries and, for the
// platform package, the bundled binary: see scripts/package.ts.)

import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import { SHIPPED_FILES, formatEntries, isLinuxX64Elf } from '../scripts/vsix';
import { EXTENSION, qflowBinary } from './support';

test('vsce ls lists exactly the files that should ship', () => {
  const r = spawnSync(path.join(EXTENSION, 'node_modules', '.bin', 'vsce'), ['ls', '--no-dependencies'], {
    cwd: EXTENSION,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.equal(r.status, 0, r.stderr);
  const listed = r.stdout.split('\n').filter((l) => l.trim() !== '').sort();
  assert.deepEqual(listed, [...SHIPPED_FILES].sort());
});

test('the bundle a package ships exists and needs nothing but vscode at run time', () => {
  const bundle = fs.readFileSync(path.join(EXTENSION, 'dist', 'extension.js'), 'utf8');
  const required = new Set([...bundle.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]));
  const external = [...required].filter((m) => !m.startsWith('node:') && !isNodeBuiltin(m));
  assert.deepEqual(external, ['vscode']);
});

function isNodeBuiltin(m: string): boolean {
  return (require('node:module') as { builtinModules: string[] }).builtinModules.includes(m);
}

test('an x86-64 ELF is told apart from a script', () => {
  const head = Buffer.alloc(64);
  const fd = fs.openSync(qflowBinary(), 'r');
  fs.readSync(fd, head, 0, 64, 0);
  fs.closeSync(fd);
  assert.equal(isLinuxX64Elf(head), process.platform === 'linux' && process.arch === 'x64');
  assert.equal(isLinuxX64Elf(Buffer.from('#!/bin/sh\necho qflow\n')), false);
  assert.equal(
    formatEntries([{ name: 'extension/bin/qflow', size: 1234, compressed: 56, mode: 0o755 }]),
    '  extension/bin/qflow        1234 bytes  (       56 compressed)',
  );
});

test('the platform package refuses a missing or foreign binary, saying how to build one', () => {
  const script = path.join(EXTENSION, 'out', 'scripts', 'package.js');
  const run = (bin: string) =>
    spawnSync(process.execPath, [script, 'linux-x64'], { cwd: EXTENSION, encoding: 'utf8', env: { ...process.env, QFLOW_RELEASE_BIN: bin } });
  const missing = run('/nonexistent/qflow');
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /no dist binary at \/nonexistent\/qflow: run `cargo build --profile dist --locked`/);
  const script2 = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'qflow-pkg-')), 'qflow');
  fs.writeFileSync(script2, '#!/bin/sh\n', { mode: 0o755 });
  const foreign = run(script2);
  assert.equal(foreign.status, 1);
  assert.match(foreign.stderr, /is not an x86-64 Linux executable/);
  const unknown = spawnSync(process.execPath, [script, 'darwin-arm64'], { cwd: EXTENSION, encoding: 'utf8' });
  assert.equal(unknown.status, 1);
  assert.match(unknown.stderr, /unknown target "darwin-arm64"/);
  assert.equal(fs.existsSync(path.join(EXTENSION, 'bin')), false, 'no bin/ is left behind');
});
