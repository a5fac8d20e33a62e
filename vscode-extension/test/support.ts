// Shared by the tests: where the repository and the built `qflow` are.

import * as fs from 'node:fs';
import * as path from 'node:path';

/** The repository root (this file runs from out/test/). */
export const REPO = path.resolve(__dirname, '..', '..', '..');
export const EXTENSION = path.join(REPO, 'vscode-extension');
export const SAMPLES = path.join(REPO, 'samples');

/**
 * The `qflow` the tests run: $QFLOW_BIN, else the debug build `cargo build`
 * (and `cargo test`) leave in target/debug. Missing is a failure that says how
 * to build it, never a skip: these tests are about the real server.
 */
export function qflowBinary(): string {
  const bin = process.env.QFLOW_BIN || path.join(REPO, 'target', 'debug', process.platform === 'win32' ? 'qflow.exe' : 'qflow');
  if (!fs.existsSync(bin)) {
    throw new Error(`no qflow binary at ${bin}: run \`cargo build --locked\` in ${REPO} first (or set QFLOW_BIN)`);
  }
  return bin;
}

/** Every .bpmn under a folder, sorted. */
export function modelsUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      out.push(...modelsUnder(p));
    } else if (entry.name.endsWith('.bpmn')) {
      out.push(p);
    }
  }
  return out.sort();
}
