// What a .vsix must hold, and how to read one. Shared by the package script
// (which checks every package it builds) and the tests.

import * as yauzl from 'yauzl';

/** `vsce ls`: the extension's own files, exactly (see .vscodeignore). */
export const SHIPPED_FILES = [
  'CHANGELOG.md',
  'LICENSE',
  'README.md',
  'dist/extension.js',
  'language-configuration.json',
  'package.json',
  'syntaxes/bpmn.tmLanguage.json',
] as const;

/** The same files as vsce stores them in the zip (it renames the docs), plus its two manifests. */
export const UNIVERSAL_ENTRIES = [
  '[Content_Types].xml',
  'extension.vsixmanifest',
  'extension/LICENSE.txt',
  'extension/changelog.md',
  'extension/dist/extension.js',
  'extension/language-configuration.json',
  'extension/package.json',
  'extension/readme.md',
  'extension/syntaxes/bpmn.tmLanguage.json',
] as const;

/** Where a platform package carries the qflow binary (what `bundledBinary` looks for). */
export const BUNDLED_ENTRY = 'extension/bin/qflow';

export interface ZipEntry {
  name: string;
  size: number;
  compressed: number;
  /** Unix permission bits, when the zip records them. */
  mode: number;
}

/** Every entry of a .vsix (a zip), sorted by name. */
export async function listVsix(file: string): Promise<ZipEntry[]> {
  const zip = await yauzl.openPromise(file, { lazyEntries: true, autoClose: true });
  const entries: ZipEntry[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (e: yauzl.Entry) => {
      entries.push({
        name: e.fileName,
        size: e.uncompressedSize,
        compressed: e.compressedSize,
        mode: (e.externalFileAttributes >>> 16) & 0o7777,
      });
      zip.readEntry();
    });
    zip.on('end', () => resolve());
    zip.on('error', reject);
    zip.readEntry();
  });
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The bytes of one entry. */
export async function readVsixEntry(file: string, name: string): Promise<Buffer> {
  const zip = await yauzl.openPromise(file, { lazyEntries: true, autoClose: false });
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      zip.on('entry', (e: yauzl.Entry) => {
        if (e.fileName !== name) {
          zip.readEntry();
          return;
        }
        zip.openReadStream(e, (err, stream) => {
          if (err || !stream) {
            reject(err ?? new Error(`cannot read ${name}`));
            return;
          }
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => resolve(Buffer.concat(chunks)));
          stream.on('error', reject);
        });
      });
      zip.on('end', () => reject(new Error(`${file} has no ${name}`)));
      zip.on('error', reject);
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
}

/** A table of entries and sizes, for the package log (and the release notes). */
export function formatEntries(entries: readonly ZipEntry[]): string {
  const width = Math.max(...entries.map((e) => e.name.length));
  return entries
    .map((e) => `  ${e.name.padEnd(width)}  ${String(e.size).padStart(10)} bytes  (${String(e.compressed).padStart(9)} compressed)`)
    .join('\n');
}

/** Is this an x86-64 Linux ELF executable? (What the linux-x64 package must carry.) */
export function isLinuxX64Elf(head: Buffer): boolean {
  // \x7fELF, 64-bit class, little endian, e_machine (offset 18) = 0x3e (x86-64).
  return head.length >= 20 && head.readUInt32BE(0) === 0x7f454c46 && head[4] === 2 && head[5] === 1 && head.readUInt16LE(18) === 0x3e;
}
