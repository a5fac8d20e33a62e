// Builds a .vsix with vsce and checks what went into it.
//
//   node out/scripts/package.js              qflow-<version>.vsix: the extension alone
//                                            (it finds qflow via qflow.path, PATH or a workspace build)
//   node out/scripts/package.js linux-x64    qflow-linux-x64-<version>.vsix: the same plus the
//                                            release qflow binary under bin/, so one file is all a
//                                            user installs. The binary is ../target/dist/qflow
//                                            (`cargo build --profile dist --locked`: fat LTO, one
//                                            codegen unit), or $QFLOW_RELEASE_BIN.
//
// Every package is opened afterwards: its entries must be exactly the expected
// list (see scripts/vsix.ts), and a platform package's binary must be an
// executable x86-64 ELF of the right size. Exit status 1 on any mismatch.

import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { BUNDLED_ENTRY, UNIVERSAL_ENTRIES, formatEntries, isLinuxX64Elf, listVsix, readVsixEntry } from './vsix';

const EXTENSION = path.resolve(__dirname, '..', '..');
const REPO = path.dirname(EXTENSION);
const SUPPORTED_TARGETS = ['linux-x64'];

function fail(message: string): never {
  console.error(`package: ${message}`);
  process.exit(1);
}

function vsce(args: string[]): void {
  const bin = path.join(EXTENSION, 'node_modules', '.bin', process.platform === 'win32' ? 'vsce.cmd' : 'vsce');
  // No stdin: a question from vsce fails the build instead of hanging it.
  // The manifest has no repository URL (the project has no public home yet).
  const r = spawnSync(bin, ['package', '--no-dependencies', '--allow-missing-repository', ...args], {
    cwd: EXTENSION,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.error) {
    fail(`cannot run vsce (${r.error.message}): run \`npm ci\` in ${EXTENSION} first`);
  }
  if (r.status !== 0) {
    fail(`vsce package ${args.join(' ')} failed with exit status ${r.status}`);
  }
}

async function main(): Promise<void> {
  const target = process.argv[2];
  if (target !== undefined && !SUPPORTED_TARGETS.includes(target)) {
    fail(`unknown target "${target}": this script builds the universal package (no argument) or ${SUPPORTED_TARGETS.join(', ')}`);
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(EXTENSION, 'package.json'), 'utf8')) as { name: string; version: string };
  const binDir = path.join(EXTENSION, 'bin');
  // bin/ exists only while a platform package is built: never ship a stale binary.
  fs.rmSync(binDir, { recursive: true, force: true });

  let out: string;
  let source: string | undefined;
  if (target === undefined) {
    out = path.join(EXTENSION, `${manifest.name}-${manifest.version}.vsix`);
    vsce(['--out', out]);
  } else {
    source = process.env.QFLOW_RELEASE_BIN || path.join(REPO, 'target', 'dist', 'qflow');
    if (!fs.existsSync(source)) {
      fail(`no dist binary at ${source}: run \`cargo build --profile dist --locked\` in ${REPO} first (or set QFLOW_RELEASE_BIN)`);
    }
    const head = Buffer.alloc(64);
    const fd = fs.openSync(source, 'r');
    fs.readSync(fd, head, 0, 64, 0);
    fs.closeSync(fd);
    if (!isLinuxX64Elf(head)) {
      fail(`${source} is not an x86-64 Linux executable; the ${target} package needs one`);
    }
    out = path.join(EXTENSION, `${manifest.name}-${target}-${manifest.version}.vsix`);
    fs.mkdirSync(binDir);
    try {
      fs.copyFileSync(source, path.join(binDir, 'qflow'));
      fs.chmodSync(path.join(binDir, 'qflow'), 0o755);
      vsce(['--target', target, '--out', out]);
    } finally {
      fs.rmSync(binDir, { recursive: true, force: true });
    }
  }

  const entries = await listVsix(out);
  const expected = [...UNIVERSAL_ENTRIES, ...(source ? [BUNDLED_ENTRY] : [])].sort();
  const names = entries.map((e) => e.name);
  const missing = expected.filter((n) => !names.includes(n));
  const extra = names.filter((n) => !expected.includes(n));
  if (missing.length > 0 || extra.length > 0) {
    fail(`${path.basename(out)} does not hold exactly the expected files: missing [${missing.join(', ')}], unexpected [${extra.join(', ')}]`);
  }
  if (source) {
    const bin = entries.find((e) => e.name === BUNDLED_ENTRY)!;
    if ((bin.mode & 0o111) !== 0o111) {
      fail(`${BUNDLED_ENTRY} is not executable in the package (mode ${bin.mode.toString(8)})`);
    }
    if (bin.size !== fs.statSync(source).size) {
      fail(`${BUNDLED_ENTRY} is ${bin.size} bytes, but ${source} is ${fs.statSync(source).size}`);
    }
    if (!isLinuxX64Elf(await readVsixEntry(out, BUNDLED_ENTRY))) {
      fail(`${BUNDLED_ENTRY} in the package is not an x86-64 Linux executable`);
    }
  }
  console.log(`package: ${path.relative(process.cwd(), out) || out}: ${fs.statSync(out).size} bytes, ${entries.length} entries, as expected:`);
  console.log(formatEntries(entries));
}

main().catch((e: unknown) => fail(e instanceof Error ? e.message : String(e)));
