// The VS Code face of qflow: it starts `qflow lsp` for .bpmn files and offers
// the studio's commands (run, console, check the workspace). Every verdict it
// shows comes from the qflow binary; the extension holds no rules.

import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as vscode from 'vscode';
import { LanguageClient, State } from 'vscode-languageclient/node';
import type { Diagnostic as LspDiagnostic } from 'vscode-languageserver-protocol';

import {
  MODEL_EXCLUDE,
  MODEL_GLOB,
  batches,
  checkArgv,
  checkSummary,
  commandLine,
  consoleArgs,
  parseCheckOutput,
  runArgs,
} from './commands';
import { EXPLAIN_COMMAND, PAGE_SCHEME, codeOfPage, explainArgv, explainLink, isCode, pageUri, unavailablePage } from './explain';
import {
  DIAGRAM_EDITOR,
  DIAGRAM_PANEL,
  DIAGRAM_REQUEST,
  DiagramPanel,
  DiagramViews,
  WEBVIEW_OPTIONS,
  diagramParams,
  instanceChoices,
  instanceRenderArgv,
  instancesArgv,
  resolveDiagramEditor,
  type DiagramResult,
  type Host,
  type Range,
} from './diagram';
import { bundledBinary, describeSource, resolveServer, serverOptions, type Resolution } from './server';
import { statusView, type ServerState } from './status';

const OPEN_SETTINGS = 'Open Settings';
const SHOW_LOG = 'Show Log';

class Studio {
  private client: LanguageClient | undefined;
  private state: ServerState | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly output: vscode.OutputChannel,
    private readonly status: vscode.StatusBarItem,
    readonly checkResults: vscode.DiagnosticCollection,
  ) {}

  /** Resolve the binary now (settings, PATH and the workspace may have changed since last time). */
  resolve(): Resolution {
    const extensionPath = this.context.extensionPath;
    makeBundledExecutable(extensionPath);
    return resolveServer({
      setting: vscode.workspace.getConfiguration('qflow').get<string>('path'),
      extensionPath,
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      workspaceTrusted: vscode.workspace.isTrusted,
      envPath: process.env.PATH,
      home: os.homedir(),
    });
  }

  /** The binary for a command, or undefined after telling the user how to fix it. */
  binaryForCommand(): string | undefined {
    const r = this.resolve();
    if (r.kind === 'found') {
      return r.binary;
    }
    void explainMissing(r.message);
    return undefined;
  }

  setState(state: ServerState): void {
    this.state = state;
    const view = statusView(state);
    this.status.text = view.text;
    this.status.tooltip = view.tooltip;
    this.status.command = view.command;
    this.status.backgroundColor = view.alarm ? new vscode.ThemeColor(`statusBarItem.${view.alarm}Background`) : undefined;
    this.status.show();
  }

  currentState(): ServerState | undefined {
    return this.state;
  }

  async start(): Promise<void> {
    const r = this.resolve();
    if (r.kind !== 'found') {
      this.output.appendLine(r.message);
      this.setState({ kind: 'not-found', message: r.message });
      void explainMissing(r.message);
      return;
    }
    const detail = describeSource(r.source);
    this.output.appendLine(`qflow: starting ${r.binary} lsp (${detail})`);
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const client = new LanguageClient(
      'qflow',
      'qflow',
      { run: serverOptions(r.binary, cwd), debug: serverOptions(r.binary, cwd) },
      {
        documentSelector: [
          { scheme: 'file', language: 'bpmn' },
          { scheme: 'untitled', language: 'bpmn' },
        ],
        outputChannel: this.output,
        middleware: {
          // The server's verdict on an open document replaces Check Workspace's
          // (older) one for that file, so the Problems panel lists it once.
          handleDiagnostics: (uri, diagnostics, next) => {
            if (vscode.workspace.textDocuments.some((d) => sameFile(d.uri, uri))) {
              this.checkResults.delete(uri);
            }
            next(uri, diagnostics.map(linkToPage));
          },
        },
      },
    );
    this.client = client;
    client.onDidChangeState((e) => {
      if (this.client !== client) {
        return;
      }
      if (e.newState === State.Running) {
        this.setState({ kind: 'running', binary: r.binary, detail });
      } else if (e.newState === State.Starting) {
        this.setState({ kind: 'starting', binary: r.binary });
      } else {
        this.setState({ kind: 'stopped', binary: r.binary });
      }
    });
    this.setState({ kind: 'starting', binary: r.binary });
    try {
      await client.start();
      this.setState({ kind: 'running', binary: r.binary, detail });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      this.output.appendLine(`qflow: the server did not start: ${reason}`);
      this.setState({ kind: 'stopped', binary: r.binary, reason });
      void vscode.window
        .showErrorMessage(`qflow: ${r.binary} lsp did not start: ${reason}`, SHOW_LOG, OPEN_SETTINGS)
        .then((choice) => {
          if (choice === SHOW_LOG) {
            this.output.show(true);
          } else if (choice === OPEN_SETTINGS) {
            void openSettings();
          }
        });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (e) {
        this.output.appendLine(`qflow: stopping the server: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  async restart(): Promise<void> {
    this.output.appendLine('qflow: restarting the language server');
    await this.stop();
    await this.start();
  }

  /** `qflow/diagram` for a document; undefined while the server is not running. */
  async diagram(uri: string): Promise<DiagramResult | null | undefined> {
    const client = this.client;
    if (!client) {
      return undefined;
    }
    return client.sendRequest<DiagramResult | null>(DIAGRAM_REQUEST, diagramParams(uri));
  }

  /** Is the server publishing for this document (so Check Workspace need not)? */
  serves(uri: vscode.Uri): boolean {
    return this.client !== undefined && vscode.workspace.textDocuments.some((d) => d.languageId === 'bpmn' && sameFile(d.uri, uri));
  }
}

function sameFile(a: vscode.Uri, b: vscode.Uri): boolean {
  return a.scheme === b.scheme && (a.scheme === 'file' ? a.fsPath === b.fsPath : a.toString() === b.toString());
}

/** A file: URI as `qflow check` spelt it (Node's encoding), as VS Code's own Uri. */
function fileUri(href: string): vscode.Uri {
  return vscode.Uri.file(fileURLToPath(href));
}

/** A platform package's binary must be executable; a zip tool may have lost the bit. */
function makeBundledExecutable(extensionPath: string): void {
  if (process.platform === 'win32') {
    return;
  }
  const bin = bundledBinary(extensionPath);
  try {
    const st = fs.statSync(bin);
    if (st.isFile() && (st.mode & 0o111) === 0) {
      fs.chmodSync(bin, st.mode | 0o755);
    }
  } catch {
    // Not a platform package: nothing bundled.
  }
}

/** The Settings editor at one setting (`qflow.path` unless another is the fix). */
function openSettings(setting = 'qflow.path'): Thenable<unknown> {
  return vscode.commands.executeCommand('workbench.action.openSettings', setting);
}

async function explainMissing(message: string): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, OPEN_SETTINGS);
  if (choice === OPEN_SETTINGS) {
    await openSettings();
  }
}

/** The model a command acts on: the one it was invoked on (explorer, editor title), else the active editor's. */
async function targetModel(arg: unknown, verb: string): Promise<vscode.Uri | undefined> {
  const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
  if (!uri) {
    void vscode.window.showErrorMessage(`qflow: open a .bpmn model first, then ${verb} it.`);
    return undefined;
  }
  if (uri.scheme !== 'file') {
    void vscode.window.showErrorMessage(`qflow: save the model to a file first, then ${verb} it.`);
    return undefined;
  }
  // The binary reads the file on disk: save unsaved edits first.
  const doc = vscode.workspace.textDocuments.find((d) => sameFile(d.uri, uri));
  if (doc?.isDirty && !(await doc.save())) {
    void vscode.window.showErrorMessage(`qflow: could not save ${uri.fsPath}; ${verb} needs it on disk.`);
    return undefined;
  }
  return uri;
}

function terminalCwd(uri: vscode.Uri): string {
  return vscode.workspace.getWorkspaceFolder(uri)?.uri.fsPath ?? path.dirname(uri.fsPath);
}

async function openInConsole(studio: Studio, arg: unknown): Promise<void> {
  const uri = await targetModel(arg, 'open the console on');
  const binary = uri && studio.binaryForCommand();
  if (!uri || !binary) {
    return;
  }
  const terminal = vscode.window.createTerminal({ name: `qflow console: ${path.basename(uri.fsPath)}`, cwd: terminalCwd(uri) });
  terminal.show();
  terminal.sendText(commandLine(consoleArgs(binary, uri.fsPath)));
}

const RUN_TERMINAL = 'qflow run';

async function runModel(studio: Studio, arg: unknown): Promise<void> {
  const uri = await targetModel(arg, 'run');
  const binary = uri && studio.binaryForCommand();
  if (!uri || !binary) {
    return;
  }
  const existing = vscode.window.terminals.find((t) => t.name === RUN_TERMINAL && t.exitStatus === undefined);
  const terminal = existing ?? vscode.window.createTerminal({ name: RUN_TERMINAL, cwd: terminalCwd(uri) });
  terminal.show();
  terminal.sendText(commandLine(runArgs(binary, uri.fsPath)));
}

function runCheck(binary: string, files: readonly string[]): Promise<Map<string, LspDiagnostic[]>> {
  return new Promise((resolve, reject) => {
    execFile(binary, checkArgv(files), { maxBuffer: 256 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      // Exit 1 means "errors found" and 2 "a file was unreadable": both still print the JSON.
      const code = error && typeof error.code === 'number' ? error.code : error ? -1 : 0;
      if (code === -1 || code > 2) {
        reject(new Error(`${binary} check failed: ${error?.message ?? ''} ${stderr.trim()}`.trim()));
        return;
      }
      try {
        resolve(parseCheckOutput(stdout));
      } catch (e) {
        reject(e instanceof Error ? new Error(`${e.message}${stderr.trim() ? ` (stderr: ${stderr.trim()})` : ''}`) : e);
      }
    });
  });
}

/**
 * A qflow diagnostic whose code links to its page in a preview (the
 * `qflow.explain` command) rather than to the server's file: link, which
 * VS Code would open as Markdown source.
 */
function linkToPage(d: vscode.Diagnostic): vscode.Diagnostic {
  if (typeof d !== 'object' || d === null) {
    return d;
  }
  const code = typeof d.code === 'object' ? d.code.value : d.code;
  if (isCode(code)) {
    d.code = { value: code, target: vscode.Uri.parse(explainLink(code)) };
  }
  return d;
}

/** qflow.explain: a code's page, as `qflow explain CODE` prints it, in a Markdown preview. */
async function explain(code: unknown): Promise<void> {
  if (!isCode(code)) {
    void vscode.window.showErrorMessage(`qflow: no diagnostic code ${String(code)} to explain (codes look like QF022).`);
    return;
  }
  const uri = vscode.Uri.parse(pageUri(code));
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    // The built-in Markdown extension is disabled: the page as text.
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
  }
}

/** The text of a page document: what the binary's `qflow explain CODE` prints. */
async function pageText(s: Studio, uri: vscode.Uri): Promise<string> {
  const code = codeOfPage(uri.path);
  if (!code) {
    return unavailablePage(uri.path, 'this is not a diagnostic code');
  }
  const r = s.resolve();
  if (r.kind !== 'found') {
    return unavailablePage(code, r.message);
  }
  try {
    return await runQflow(r.binary, explainArgv(code), os.tmpdir());
  } catch (e) {
    return unavailablePage(code, e instanceof Error ? e.message : String(e));
  }
}

function toVscodeDiagnostic(d: LspDiagnostic): vscode.Diagnostic {
  const range = (r: LspDiagnostic['range']) => new vscode.Range(r.start.line, r.start.character, r.end.line, r.end.character);
  const severity = [vscode.DiagnosticSeverity.Error, vscode.DiagnosticSeverity.Warning, vscode.DiagnosticSeverity.Information, vscode.DiagnosticSeverity.Hint][
    (d.severity ?? 1) - 1
  ];
  const out = new vscode.Diagnostic(range(d.range), d.message, severity);
  out.source = d.source;
  if (d.code !== undefined) {
    out.code = isCode(d.code) ? { value: d.code, target: vscode.Uri.parse(explainLink(d.code)) } : d.code;
  }
  if (d.relatedInformation) {
    out.relatedInformation = d.relatedInformation.map(
      (r) => new vscode.DiagnosticRelatedInformation(new vscode.Location(fileUri(r.location.uri), range(r.location.range)), r.message),
    );
  }
  return out;
}

/** Every model in the workspace through `qflow check --format lsp`, into the Problems panel. */
async function checkWorkspace(studio: Studio): Promise<void> {
  const binary = studio.binaryForCommand();
  if (!binary) {
    return;
  }
  const uris = await vscode.workspace.findFiles(MODEL_GLOB, MODEL_EXCLUDE);
  if (uris.length === 0) {
    void vscode.window.showInformationMessage('qflow: no .bpmn or .bpmn20.xml models in this workspace.');
    return;
  }
  const files = uris.filter((u) => u.scheme === 'file').map((u) => u.fsPath);
  try {
    const results = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `qflow: checking ${files.length} models` },
      async () => {
        const all = new Map<string, LspDiagnostic[]>();
        for (const batch of batches(files)) {
          for (const [uri, diagnostics] of await runCheck(binary, batch)) {
            all.set(uri, [...(all.get(uri) ?? []), ...diagnostics]);
          }
        }
        return all;
      },
    );
    studio.checkResults.clear();
    for (const [uri, diagnostics] of results) {
      const target = fileUri(uri);
      if (!studio.serves(target)) {
        studio.checkResults.set(target, diagnostics.map(toVscodeDiagnostic));
      }
    }
    studio.output.appendLine(checkSummary(files.length, results));
    void vscode.window.showInformationMessage(checkSummary(files.length, results));
    await vscode.commands.executeCommand('workbench.actions.view.problems');
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    studio.output.appendLine(`qflow: Check Workspace: ${message}`);
    void vscode.window.showErrorMessage(`qflow: Check Workspace failed: ${message}`);
  }
}

let studio: Studio | undefined;

/** The open Show Diagram panels, one per document. */
const panels = new Map<string, DiagramPanel>();
/** Every open drawing, panel or custom editor, redrawn as its document changes. */
const views = new DiagramViews();

/** What both diagram faces ask of VS Code: the server's drawing, an instance's, a reveal in the text. */
function diagramHost(s: Studio): Host {
  return {
    request: (u) => s.diagram(u),
    createPanel: (title) => {
      const p = vscode.window.createWebviewPanel(DIAGRAM_PANEL, title, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, WEBVIEW_OPTIONS);
      return {
        webview: p.webview,
        onDidDispose: (l) => p.onDidDispose(l),
        title,
        get active() {
          return p.active;
        },
      };
    },
    renderInstance: (u, instance) => {
      const binary = s.binaryForCommand();
      if (!binary) {
        return Promise.reject(new Error('no qflow binary'));
      }
      const model = vscode.Uri.parse(u).fsPath;
      return runQflow(binary, instanceRenderArgv(model, instance, database()), path.dirname(model));
    },
    reveal: (u, range) => revealInText(u, range),
  };
}

/**
 * Put the cursor on `range` in a text editor of the document: the one that
 * shows it already, else a new one beside the diagram (which, in the custom
 * editor, is where the document was opened).
 */
async function revealInText(u: string, range: Range): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(u));
  const r = new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character);
  const visible = vscode.window.visibleTextEditors.find((ed) => ed.document.uri.toString() === u);
  await vscode.window.showTextDocument(doc, { viewColumn: visible?.viewColumn ?? vscode.ViewColumn.Beside, selection: r, preserveFocus: false });
}

/**
 * qflow: Show Diagram — the active model drawn by the language server in a
 * panel beside the text, redrawn as the text changes, a click on an element
 * putting the cursor on it.
 */
async function showDiagram(s: Studio, arg?: unknown): Promise<DiagramPanel | undefined> {
  const uri = arg instanceof vscode.Uri ? arg : vscode.window.activeTextEditor?.document.uri;
  if (!uri) {
    void vscode.window.showInformationMessage('qflow: open a .bpmn model to draw it.');
    return undefined;
  }
  const key = uri.toString();
  const open = panels.get(key);
  if (open && !open.isDisposed) {
    await open.update();
    return open;
  }
  const panel = views.add(new DiagramPanel(diagramHost(s), key, `Diagram: ${path.basename(uri.fsPath)}`));
  panel.onDidDispose(() => panels.delete(key));
  panels.set(key, panel);
  await panel.update();
  return panel;
}

/**
 * The "qflow Diagram" custom editor (Reopen Editor With…, or Open With… on
 * a .bpmn): the same drawing as Show Diagram, in the editor VS Code opens.
 * The document stays a text document (its edits, undo and saving are the
 * text editor's); the diagram follows its changes.
 */
function diagramEditor(s: Studio): vscode.CustomTextEditorProvider {
  return {
    resolveCustomTextEditor: async (document, webviewPanel) => {
      webviewPanel.webview.options = WEBVIEW_OPTIONS;
      await resolveDiagramEditor(diagramHost(s), views, document.uri.toString(), webviewPanel);
    },
  };
}

/** The `qflow.database` setting (empty: the binary's own default). */
function database(): string | undefined {
  const db = vscode.workspace.getConfiguration('qflow').get<string>('database')?.trim();
  return db ? db : undefined;
}

/** Run the binary in `cwd`; its stdout, or its stderr as the error. */
function runQflow(binary: string, argv: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(binary, argv, { cwd, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(stderr.trim() || error.message));
      } else {
        resolve(stdout);
      }
    });
  });
}

/**
 * qflow: Show Instance on Diagram — pick an instance of the model's process
 * from the database (the `qflow.database` setting, else $QFLOW_DB or the
 * nearest qflow.toml's `db`) and draw its state on a diagram: the one the
 * user is in (a qflow Diagram editor, from its title bar or the palette),
 * else the Show Diagram panel of the active text editor's model.
 */
async function showInstance(s: Studio, arg?: unknown): Promise<void> {
  const view = views.active(arg instanceof vscode.Uri ? arg.toString() : undefined) ?? (await showDiagram(s, arg));
  const binary = view && s.binaryForCommand();
  if (!view || !binary) {
    return;
  }
  if (!view.result) {
    // Nothing drawn yet: no process to pick an instance of (saying that the
    // database holds none of it would send the user to the wrong place).
    void vscode.window.showErrorMessage('qflow: the model does not parse yet, so it names no process to show an instance of: fix the text first.');
    return;
  }
  const model = vscode.Uri.parse(view.uri).fsPath;
  let choices;
  try {
    const json = await runQflow(binary, instancesArgv(database()), path.dirname(model));
    choices = instanceChoices(json, view.result.process);
  } catch (e) {
    const choice = await vscode.window.showErrorMessage(
      `qflow: no database to read instances from (set qflow.database, or a qflow.toml with db): ${e instanceof Error ? e.message : String(e)}`,
      OPEN_SETTINGS,
    );
    if (choice === OPEN_SETTINGS) {
      await openSettings('qflow.database');
    }
    return;
  }
  if (choices.length === 0) {
    void vscode.window.showInformationMessage(`qflow: the database holds no instance of ${view.result.process}.`);
    return;
  }
  const picked = await vscode.window.showQuickPick(
    choices.map((c) => ({ label: c.instance, description: c.detail })),
    { placeHolder: 'the instance whose state to draw' },
  );
  if (picked) {
    await view.showInstance(picked.label);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('qflow');
  const status = vscode.window.createStatusBarItem('qflow.server', vscode.StatusBarAlignment.Right, 100);
  status.name = 'qflow language server';
  const checkResults = vscode.languages.createDiagnosticCollection('qflow-check');
  const s = new Studio(context, output, status, checkResults);
  studio = s;
  context.subscriptions.push(
    output,
    status,
    checkResults,
    vscode.commands.registerCommand('qflow.restartServer', () => s.restart()),
    vscode.commands.registerCommand('qflow.openInConsole', (uri?: unknown) => openInConsole(s, uri)),
    vscode.commands.registerCommand('qflow.runModel', (uri?: unknown) => runModel(s, uri)),
    vscode.commands.registerCommand('qflow.checkWorkspace', () => checkWorkspace(s)),
    vscode.commands.registerCommand('qflow.showOutput', () => output.show(true)),
    vscode.commands.registerCommand('qflow.showDiagram', async (uri?: unknown) => void (await showDiagram(s, uri))),
    vscode.commands.registerCommand('qflow.showInstanceOnDiagram', (uri?: unknown) => showInstance(s, uri)),
    vscode.window.registerCustomEditorProvider(DIAGRAM_EDITOR, diagramEditor(s), { supportsMultipleEditorsPerDocument: true }),
    vscode.workspace.onDidChangeTextDocument((e) => void views.changed(e.document.uri.toString())),
    vscode.commands.registerCommand('qflow.openSettings', () => openSettings()),
    vscode.commands.registerCommand(EXPLAIN_COMMAND, (code?: unknown) => explain(code)),
    vscode.workspace.registerTextDocumentContentProvider(PAGE_SCHEME, { provideTextDocumentContent: (uri) => pageText(s, uri) }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('qflow.path')) {
        void s.restart();
      }
    }),
    // Trusting the workspace may make its own build usable.
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      if (s.currentState()?.kind === 'not-found') {
        void s.restart();
      }
    }),
  );
  await s.start();
}

export async function deactivate(): Promise<void> {
  const s = studio;
  studio = undefined;
  await s?.stop();
}

/** For the tests: what the status bar shows. */
export function currentServerState(): ServerState | undefined {
  return studio?.currentState();
}
