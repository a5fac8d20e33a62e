// What the studio's commands type and read: terminal command lines for
// `qflow run` and `qflow console`, a model's scenario, and `qflow check
// --format json` turned into editor diagnostics. Pure functions (no `vscode`),
// unit-tested in test/commands.test.ts.

import { pathToFileURL } from 'node:url';
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

/** One entry of `qflow check --format json` (see the root README). */
export interface CheckEntry {
  code: string;
  severity: 'error' | 'warning' | 'info' | 'hint';
  message: string;
  help?: string | null;
  url?: string;
  path: string;
  offset: number;
  length: number;
  related?: Array<{ message: string; path: string; offset: number; length: number }>;
}

/** `qflow check --format json …` for a batch of files (absolute paths, so `path` comes back absolute). */
export function checkArgv(files: readonly string[]): string[] {
  return ['check', '--format', 'json', ...files];
}

/** Batches small enough for any OS's command-line limit. */
export function batches<T>(items: readonly T[], size = 200): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(items.slice(i, i + size));
  }
  return out;
}

/** Parse `qflow check --format json` stdout, with an error that says what came instead. */
export function parseCheckOutput(stdout: string): CheckEntry[] {
  let value: unknown;
  try {
    value = JSON.parse(stdout);
  } catch (e) {
    const head = stdout.trim().slice(0, 120);
    throw new Error(`qflow check did not print JSON (${(e as Error).message}); it printed: ${head === '' ? '(nothing)' : head}`);
  }
  if (!Array.isArray(value)) {
    throw new Error('qflow check --format json printed something other than an array of diagnostics');
  }
  return value as CheckEntry[];
}

/** An LSP position (0-based line, UTF-16 column) of a byte offset, the way the server computes it. */
export function positionAt(bytes: Buffer, offset: number): { line: number; character: number } {
  let at = Math.max(0, Math.min(offset, bytes.length));
  // Inside a multi-byte character: back to its first byte.
  while (at > 0 && at < bytes.length && (bytes[at] & 0xc0) === 0x80) {
    at -= 1;
  }
  let line = 0;
  let lineStart = 0;
  for (let i = bytes.indexOf(0x0a); i !== -1 && i < at; i = bytes.indexOf(0x0a, i + 1)) {
    line += 1;
    lineStart = i + 1;
  }
  let prefix = bytes.subarray(lineStart, at).toString('utf8');
  if (prefix.endsWith('\r')) {
    prefix = prefix.slice(0, -1);
  }
  return { line, character: prefix.length };
}

const SEVERITY = { error: 1, warning: 2, info: 3, hint: 4 } as const;

/**
 * `qflow check` entries as the LSP diagnostics the server would publish for
 * the same files (same range, code, link, source and message with its help
 * line), keyed by file URI. `read` gives a file's bytes; a file that cannot be
 * read keeps its diagnostics at the start.
 */
export function checkToDiagnostics(entries: readonly CheckEntry[], read: (p: string) => Buffer): Map<string, LspDiagnostic[]> {
  const texts = new Map<string, Buffer>();
  const bytesOf = (p: string): Buffer => {
    let b = texts.get(p);
    if (b === undefined) {
      try {
        b = read(p);
      } catch {
        b = Buffer.alloc(0);
      }
      texts.set(p, b);
    }
    return b;
  };
  const range = (p: string, offset: number, length: number) => {
    const b = bytesOf(p);
    return { start: positionAt(b, offset), end: positionAt(b, offset + length) };
  };
  const out = new Map<string, LspDiagnostic[]>();
  for (const e of entries) {
    const uri = pathToFileURL(e.path).href;
    const d: LspDiagnostic = {
      range: range(e.path, e.offset, e.length),
      severity: SEVERITY[e.severity] ?? 1,
      code: e.code,
      source: 'qflow',
      message: e.help ? `${e.message}\nhelp: ${e.help}` : e.message,
    };
    if (e.url) {
      d.codeDescription = { href: e.url };
    }
    if (e.related && e.related.length > 0) {
      d.relatedInformation = e.related.map((r) => ({
        location: { uri: pathToFileURL(r.path).href, range: range(r.path, r.offset, r.length) },
        message: r.message,
      }));
    }
    const list = out.get(uri) ?? [];
    list.push(d);
    out.set(uri, list);
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
