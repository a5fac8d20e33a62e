// What the studio's commands type and read: terminal command lines for
// `qflow run` and `qflow console`, and `qflow check --format lsp` read into
// editor diagnostics by file. Pure functions (no `vscode`),
// unit-tested in test/commands.test.ts.

import type { Diagnostic as LspDiagnostic } from 'vscode-languageserver-protocol';

/** Quote one argument for the integrated terminal's shell: POSIX sh/bash/zsh/fish, or PowerShell on Windows. */
export function quote(arg: string, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') {
    return `'${arg.replace(/'/g, "''")}'`;
  }
  if (/^[A-Za-z0-9_/.:=+,@%-]+$/.test(arg)) {
    return arg;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** A whole command line; PowerShell needs `&` to run a quoted program path. */
export function commandLine(argv: readonly string[], platform: NodeJS.Platform = process.platform): string {
  const line = argv.map((a) => quote(a, platform)).join(' ');
  return platform === 'win32' ? `& ${line}` : line;
}

/**
 * `qflow console MODEL`. Which scenario belongs to the model is qflow's
 * decision alone (`<dir>/scenarios/<stem>.json`, docs/run.md), and the
 * console says which one it uses: the extension never looks for one itself.
 */
export function consoleArgs(binary: string, modelPath: string): string[] {
  return [binary, 'console', modelPath];
}

/** `qflow run MODEL`: the scenario beside the model is qflow's to find, as for the console. */
export function runArgs(binary: string, modelPath: string): string[] {
  return [binary, 'run', modelPath];
}

/**
 * `qflow check --format lsp …` for a batch of files: qflow itself gives the
 * diagnostics as its language server publishes them (UTF-16 ranges,
 * severities, links, related places), so nothing is converted here.
 */
export function checkArgv(files: readonly string[]): string[] {
  return ['check', '--format', 'lsp', ...files];
}

/** Batches small enough for any OS's command-line limit. */
export function batches<T>(items: readonly T[], size = 200): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(items.slice(i, i + size));
  }
  return out;
}

/**
 * Parse `qflow check --format lsp` stdout (one `{uri, diagnostics}` per file
 * checked, a clean file with an empty list) into diagnostics by file URI,
 * with an error that says what came instead.
 */
export function parseCheckOutput(stdout: string): Map<string, LspDiagnostic[]> {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch (e) {
    const head = stdout.trim().slice(0, 120);
    throw new Error(`qflow check did not print JSON (${(e as Error).message}); it printed: ${head === '' ? '(nothing)' : head}`);
  }
  const shaped = (v: unknown): v is { uri: string; diagnostics: LspDiagnostic[] } =>
    typeof v === 'object' && v !== null && typeof (v as { uri?: unknown }).uri === 'string' && Array.isArray((v as { diagnostics?: unknown }).diagnostics);
  if (!Array.isArray(value) || !value.every(shaped)) {
    throw new Error('qflow check --format lsp printed something other than a list of {uri, diagnostics}');
  }
  const out = new Map<string, LspDiagnostic[]>();
  for (const file of value) {
    out.set(file.uri, [...(out.get(file.uri) ?? []), ...file.diagnostics]);
  }
  return out;
}

/** The summary shown when Check Workspace ends. */
export function checkSummary(files: number, diagnostics: Map<string, LspDiagnostic[]>): string {
  let errors = 0;
  let warnings = 0;
  let notes = 0;
  for (const list of diagnostics.values()) {
    for (const d of list) {
      if (d.severity === 1) errors += 1;
      else if (d.severity === 2) warnings += 1;
      else notes += 1;
    }
  }
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  return `qflow: checked ${plural(files, 'model')}: ${plural(errors, 'error')}, ${plural(warnings, 'warning')}, ${plural(notes, 'note')}.`;
}

/** The glob Check Workspace finds models with, and what it leaves out. */
export const MODEL_GLOB = '**/*.{bpmn,bpmn20.xml}';
export const MODEL_EXCLUDE = '**/{node_modules,target,.git}/**';
