// How the extension finds `qflow` and starts `qflow lsp`. Nothing here imports
// `vscode`, so the unit tests and the protocol test (which starts the real
// server through `serverOptions`) run under plain Node.

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Executable, TransportKind } from 'vscode-languageclient/node';

/** Where a binary came from, in the order they are tried. */
export type ServerSource = 'setting' | 'bundled' | 'path' | 'workspace';

export type Resolution =
  | { kind: 'found'; binary: string; source: ServerSource }
  /** `qflow.path` is set but names no executable file: never silently fall back. */
  | { kind: 'bad-setting'; setting: string; resolved: string; message: string }
  /** Nothing anywhere: `searched` lists every place tried, for the message. */
  | { kind: 'missing'; searched: string[]; message: string };

export interface ResolveInput {
  /** The `qflow.path` setting, as typed. */
  setting?: string;
  /** The extension's own folder; a platform package ships `bin/qflow` in it. */
  extensionPath?: string;
  /** Open workspace folders, first first. */
  workspaceFolders?: readonly string[];
  /**
   * Whether the user trusts the workspace (default true). A build inside an
   * untrusted workspace is never run: opening a repository must not execute
   * a binary it ships.
   */
  workspaceTrusted?: boolean;
  /** The PATH to search (the extension host's). */
  envPath?: string;
  platform?: NodeJS.Platform;
  home?: string;
  /** Whether a path is a file this process may execute (injected for tests). */
  isExecutable?: (p: string) => boolean;
}

/** The binary's file name on a platform. */
export function exeName(platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? 'qflow.exe' : 'qflow';
}

/** The bundled binary's place inside the extension (what `package:linux-x64` puts there). */
export function bundledBinary(extensionPath: string, platform: NodeJS.Platform = process.platform): string {
  return path.join(extensionPath, 'bin', exeName(platform));
}

/** A regular file with an execute bit for us (on Windows: any regular file). */
export function isExecutableFile(p: string): boolean {
  try {
    if (!fs.statSync(p).isFile()) {
      return false;
    }
    if (process.platform === 'win32') {
      return true;
    }
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `~` → home; a relative path is read from the first workspace folder. */
function expandSetting(setting: string, home: string, workspaceFolders: readonly string[]): string {
  let p = setting;
  if (p === '~' || p.startsWith('~/') || p.startsWith('~\\')) {
    p = path.join(home, p.slice(1));
  }
  if (!path.isAbsolute(p) && workspaceFolders.length > 0) {
    p = path.join(workspaceFolders[0], p);
  }
  return p;
}

/**
 * Where the qflow binary is, in the order a user expects: the `qflow.path`
 * setting (explicit, so a wrong one is an error rather than a silent fallback);
 * the binary bundled in a platform package; `qflow` on PATH; a build in an open
 * workspace folder, release before debug (a contributor running from source).
 */
export function resolveServer(input: ResolveInput): Resolution {
  const platform = input.platform ?? process.platform;
  const isExec = input.isExecutable ?? isExecutableFile;
  const folders = input.workspaceFolders ?? [];
  const exe = exeName(platform);
  const setting = (input.setting ?? '').trim();
  if (setting !== '') {
    const resolved = expandSetting(setting, input.home ?? os.homedir(), folders);
    if (isExec(resolved)) {
      return { kind: 'found', binary: resolved, source: 'setting' };
    }
    return {
      kind: 'bad-setting',
      setting,
      resolved,
      message:
        `qflow: the "qflow.path" setting is "${setting}", but ${resolved} is not an executable file. ` +
        'Fix the path (it names the qflow binary itself, e.g. /usr/local/bin/qflow), or clear the setting to use qflow from PATH.',
    };
  }
  const searched: string[] = [];
  const tryPath = (p: string, source: ServerSource): Resolution | undefined => {
    searched.push(p);
    return isExec(p) ? { kind: 'found', binary: p, source } : undefined;
  };
  if (input.extensionPath) {
    const found = tryPath(bundledBinary(input.extensionPath, platform), 'bundled');
    if (found) {
      return found;
    }
  }
  const delimiter = platform === 'win32' ? ';' : ':';
  const join = platform === 'win32' ? path.win32.join : path.posix.join;
  for (const dir of (input.envPath ?? '').split(delimiter).filter((d) => d !== '')) {
    const found = tryPath(join(dir, exe), 'path');
    if (found) {
      return found;
    }
  }
  const trusted = input.workspaceTrusted ?? true;
  for (const folder of trusted ? folders : []) {
    for (const profile of ['release', 'debug']) {
      const found = tryPath(join(folder, 'target', profile, exe), 'workspace');
      if (found) {
        return found;
      }
    }
  }
  return { kind: 'missing', searched, message: missingMessage(folders.length > 0, trusted) };
}

function missingMessage(hasWorkspace: boolean, trusted: boolean): string {
  const workspace = !hasWorkspace
    ? ''
    : trusted
      ? ', no target/release or target/debug build in the workspace'
      : '; builds inside this workspace are not run because it is not trusted';
  return (
    `qflow: cannot find the qflow binary (not bundled with this extension, not on PATH${workspace}). ` +
    'Build it with `cargo build --release` in the qflow repository and set "qflow.path" to target/release/qflow, ' +
    'or install it with `cargo install --path .` so it is on PATH.'
  );
}

/** How a resolution reads in the status bar tooltip and the log. */
export function describeSource(source: ServerSource): string {
  switch (source) {
    case 'setting':
      return 'from the qflow.path setting';
    case 'bundled':
      return 'bundled with the extension';
    case 'path':
      return 'found on PATH';
    case 'workspace':
      return 'a build in the workspace';
  }
}

// `TransportKind.stdio` without loading vscode-languageclient at run time (it
// needs the `vscode` module, which only exists inside VS Code).
const STDIO = 0 as TransportKind.stdio;

/**
 * The language client's server options: `qflow lsp` over stdio (the client
 * appends `--stdio`, which the server accepts). `RUST_BACKTRACE=1` so that a
 * server crash leaves a backtrace in the output channel.
 */
export function serverOptions(binary: string, cwd?: string): Executable {
  return {
    command: binary,
    args: ['lsp'],
    transport: STDIO,
    options: { cwd, env: { ...process.env, RUST_BACKTRACE: '1' } },
  };
}
