'use strict';
// How the extension finds and starts `qflow`. Pure functions, so they are
// tested without VS Code (test/server.test.js).

const path = require('path');
const fs = require('fs');

const EXE = process.platform === 'win32' ? 'qflow.exe' : 'qflow';

/**
 * Where the qflow binary is, in the order a user expects: an explicit setting
 * wins; then `qflow` on PATH; then a build inside an open workspace folder
 * (release before debug), which is what a contributor running from source has.
 * Returns null when nothing is found, so the caller can say how to fix it.
 */
function resolveBinary({ configuredPath, workspaceFolders = [], envPath = process.env.PATH || '', exists = fs.existsSync }) {
  if (configuredPath && configuredPath.trim() !== '') {
    return configuredPath.trim();
  }
  for (const dir of envPath.split(path.delimiter).filter(Boolean)) {
    const candidate = path.join(dir, EXE);
    if (exists(candidate)) {
      return candidate;
    }
  }
  for (const folder of workspaceFolders) {
    for (const profile of ['release', 'debug']) {
      const candidate = path.join(folder, 'target', profile, EXE);
      if (exists(candidate)) {
        return candidate;
      }
    }
  }
  return null;
}

/** The server process: `qflow lsp` over stdio. */
function serverCommand(binary) {
  return { command: binary, args: ['lsp'] };
}

/** Quote one argument for a POSIX shell or PowerShell terminal. */
function quote(arg, platform = process.platform) {
  if (platform === 'win32') {
    return `'${arg.replace(/'/g, "''")}'`;
  }
  if (/^[A-Za-z0-9_\/.:=-]+$/.test(arg)) {
    return arg;
  }
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The terminal command line for "open in console": `qflow console MODEL`, with
 * the model's scenario when one sits beside it (samples/scenarios/<stem>*.json
 * convention is the user's choice, so only an explicit scenario is passed).
 */
function consoleCommandLine(binary, modelPath, scenarioPath, platform = process.platform) {
  const parts = [binary, 'console', modelPath];
  if (scenarioPath) {
    parts.push('--scenario', scenarioPath);
  }
  const line = parts.map((p) => quote(p, platform)).join(' ');
  return platform === 'win32' ? `& ${line}` : line;
}

module.exports = { resolveBinary, serverCommand, consoleCommandLine, quote, EXE };
