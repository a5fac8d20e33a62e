// A diagnostic code's page, offline. Until qflow has a public home there is
// no web address worth linking: a qflow code in the Problems panel and in the
// hover links to the `qflow.explain` command instead, which opens the page
// `qflow explain CODE` prints (the pages are built into the binary the
// extension runs) in a Markdown preview. The server's own link (a file: URI
// of the page in the user's cache) is for editors without this extension.

/** The command a code's link runs (not in the palette: a link's target). */
export const EXPLAIN_COMMAND = 'qflow.explain';

/** The scheme of the read-only documents holding a page. */
export const PAGE_SCHEME = 'qflow-explain';

/** A qflow diagnostic code: QF and three digits. */
export function isCode(code: unknown): code is string {
  return typeof code === 'string' && /^QF\d{3}$/.test(code);
}

/**
 * The `command:` link of a code, as VS Code's opener reads one: the command
 * id, then its arguments as URI-encoded JSON.
 */
export function explainLink(code: string): string {
  return `command:${EXPLAIN_COMMAND}?${encodeURIComponent(JSON.stringify([code]))}`;
}

/** The document a code's page is shown from: `qflow-explain:QF022.md`. */
export function pageUri(code: string): string {
  return `${PAGE_SCHEME}:${code}.md`;
}

/** The code of a page document's path (`QF022.md`), or undefined. */
export function codeOfPage(path: string): string | undefined {
  const code = path.replace(/^\//, '').replace(/\.md$/, '');
  return isCode(code) ? code : undefined;
}

/** The arguments that print a code's page. */
export function explainArgv(code: string): string[] {
  return ['explain', code];
}

/** What a page document holds when the binary could not print it. */
export function unavailablePage(code: string, reason: string): string {
  return `# ${code}\n\nThe page could not be read from qflow: ${reason}\n\nRun \`qflow explain ${code}\` in a terminal, or set \`qflow.path\` to a qflow binary.\n`;
}
