// A recording stand-in for the `vscode` module (and, for the tsc output, for
// vscode-languageclient's LanguageClient): just enough API for the extension
// to activate, and a record of what a user would see — commands, messages and
// the buttons on them, terminals and what was typed, the status bar, the
// Problems panel.

import * as assert from 'node:assert/strict';
import Module = require('node:module');
import * as path from 'node:path';

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static untitled(name: string): Uri {
    return new Uri('untitled', name);
  }
  static parse(s: string): Uri {
    if (s.startsWith('file://')) {
      return new Uri('file', decodeURIComponent(new URL(s).pathname));
    }
    const colon = s.indexOf(':');
    return new Uri(s.slice(0, colon), s.slice(colon + 1));
  }
  /** The path (everything after the scheme, for a non-file URI). */
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return this.scheme === 'file' ? new URL(`file://${this.fsPath}`).href : `${this.scheme}:${this.fsPath}`;
  }
}

/**
 * Follow a link as VS Code's opener does when a user clicks one (the
 * Problems panel and the hover open links with commands allowed): a
 * `command:ID?ARGS` link runs command ID with ARGS, URI-encoded JSON.
 */
export async function follow(rec: Record, link: string): Promise<unknown> {
  const m = /^command:([^?]+)(?:\?(.*))?$/.exec(link);
  assert.ok(m, `${link} is a command link the opener runs`);
  const command = rec.commands.get(m[1]);
  assert.ok(command, `${m[1]} is a registered command`);
  const args: unknown = m[2] ? JSON.parse(decodeURIComponent(m[2])) : [];
  return command(...(Array.isArray(args) ? args : [args]));
}

export interface Message {
  level: 'error' | 'info';
  text: string;
  buttons: string[];
}

export interface Terminal {
  name: string;
  cwd?: string;
  sent: string[];
  shown: boolean;
  exitStatus: undefined;
}

export interface FakeClient {
  id: string;
  serverOptions: { run: { command: string; args: string[]; transport: number; options: { cwd?: string } } };
  clientOptions: {
    documentSelector: unknown[];
    outputChannel: unknown;
    middleware: { handleDiagnostics(uri: Uri, diagnostics: unknown[], next: (uri: Uri, diagnostics: unknown[]) => void): void };
  };
  started: boolean;
  stopped: boolean;
}

export interface Record {
  commands: Map<string, (...args: unknown[]) => unknown>;
  executed: Array<[string, ...unknown[]]>;
  messages: Message[];
  terminals: Terminal[];
  clients: FakeClient[];
  status: { text: string; tooltip: string; command: string; shown: boolean; backgroundColor?: { id: string } };
  problems: Map<string, Array<{ message: string; code: unknown; range: Range; severity: number; source?: string }>>;
  log: string[];
  configListeners: Array<(e: { affectsConfiguration(s: string): boolean }) => void>;
  trustListeners: Array<() => void>;
  /** The text document content providers, by scheme. */
  contentProviders: Map<string, { provideTextDocumentContent(uri: Uri): string | Promise<string> }>;
  /** The open documents (push to open one). */
  documents: Array<{ uri: Uri; languageId: string; isDirty: boolean; save(): Promise<boolean> }>;
  /** The custom editor providers, by view type, with their options. */
  customEditors: Map<string, { provider: CustomTextEditorProvider; options: unknown }>;
  /** The listeners of workspace.onDidChangeTextDocument (call them to type). */
  changeListeners: Array<(e: { document: { uri: Uri } }) => void>;
  /** The webview panels the extension created (window.createWebviewPanel). */
  webviewPanels: WebviewPanel[];
  /** window.showQuickPick's calls: the labels offered, and the placeholder. */
  quickPicks: Array<{ labels: string[]; placeHolder?: string }>;
  /** window.showTextDocument's calls: the document and where, with what selected. */
  shownText: Array<{ uri: Uri; viewColumn: number | undefined; selection: Range | undefined; preserveFocus: boolean | undefined }>;
}

/** A webview panel as VS Code hands it to the extension: its webview, its messages, its end. */
export interface WebviewPanel {
  viewType: string;
  title: string;
  webview: { html: string; cspSource: string; options: unknown; onDidReceiveMessage(l: (m: unknown) => void): { dispose(): void } };
  onDidDispose(l: () => void): { dispose(): void };
  /** Whether it is the active editor (a test sets it: the user is in this diagram). */
  active: boolean;
  /** What the user does: click in the picture (post a message), close it. */
  post(m: unknown): void;
  close(): void;
}

export interface CustomTextEditorProvider {
  resolveCustomTextEditor(document: { uri: Uri }, panel: WebviewPanel, token: unknown): Promise<void> | void;
}

/** A webview panel for a test to hand a custom editor (or for createWebviewPanel to return). */
export function webviewPanel(viewType: string, title = '', options: unknown = undefined): WebviewPanel {
  const messages: Array<(m: unknown) => void> = [];
  const disposed: Array<() => void> = [];
  return {
    viewType,
    title,
    webview: {
      html: '',
      cspSource: 'vscode-webview:',
      options,
      onDidReceiveMessage: (l) => (messages.push(l), { dispose() {} }),
    },
    onDidDispose: (l) => (disposed.push(l), { dispose() {} }),
    active: false,
    post: (m) => messages.forEach((l) => l(m)),
    close: () => disposed.forEach((l) => l()),
  };
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}
export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(sl: number, sc: number, el: number, ec: number) {
    this.start = new Position(sl, sc);
    this.end = new Position(el, ec);
  }
}

export interface Options {
  settings?: { [key: string]: unknown };
  workspaceFolders?: string[];
  activeFile?: Uri;
  openDocuments?: Array<{ uri: Uri; languageId: string; isDirty?: boolean }>;
  /** The button the user clicks on the next messages, in order. */
  clicks?: Array<string | undefined>;
  /** What findFiles returns. */
  files?: string[];
  /** Make LanguageClient.start() reject with this message. */
  startFails?: string;
  /** Whether the workspace is trusted (default true). */
  trusted?: boolean;
  /** What LanguageClient.sendRequest answers (a real server, say); without it, requests fail. */
  request?: (method: string, params: unknown) => Promise<unknown>;
  /** The label the user picks in each quick pick, in order (undefined: dismissed). */
  picks?: Array<string | undefined>;
  /** The text editors visible, and their columns. */
  visibleTextEditors?: Array<{ uri: Uri; viewColumn: number }>;
}

export function fakeVscode(opts: Options) {
  const docs = (opts.openDocuments ?? []).map((d) => ({ ...d, isDirty: d.isDirty ?? false, save: async () => true }));
  const rec: Record = {
    documents: docs,
    contentProviders: new Map(),
    commands: new Map(),
    executed: [],
    messages: [],
    terminals: [],
    clients: [],
    status: { text: '', tooltip: '', command: '', shown: false },
    problems: new Map(),
    log: [],
    configListeners: [],
    trustListeners: [],
    customEditors: new Map(),
    changeListeners: [],
    webviewPanels: [],
    quickPicks: [],
    shownText: [],
  };
  const picks = [...(opts.picks ?? [])];
  const clicks = [...(opts.clicks ?? [])];
  const message = (level: Message['level']) => (text: string, ...buttons: string[]) => {
    rec.messages.push({ level, text, buttons });
    return Promise.resolve(clicks.shift());
  };
  const folders = (opts.workspaceFolders ?? []).map((f, index) => ({ uri: Uri.file(f), name: path.basename(f), index }));
  const disposable = { dispose() {} };
  class Diagnostic {
    source?: string;
    code?: unknown;
    relatedInformation?: unknown[];
    constructor(
      readonly range: Range,
      readonly message: string,
      readonly severity: number,
    ) {}
  }
  const vscode = {
    Uri,
    Range,
    Position,
    Diagnostic,
    DiagnosticRelatedInformation: class {
      constructor(
        readonly location: unknown,
        readonly message: string,
      ) {}
    },
    Location: class {
      constructor(
        readonly uri: Uri,
        readonly range: Range,
      ) {}
    },
    ThemeColor: class {
      constructor(readonly id: string) {}
    },
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    StatusBarAlignment: { Left: 1, Right: 2 },
    ProgressLocation: { Notification: 15 },
    ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2 },
    workspace: {
      getConfiguration: (section: string) => ({
        get: (key: string) => opts.settings?.[`${section}.${key}`],
      }),
      workspaceFolders: folders.length > 0 ? folders : undefined,
      getWorkspaceFolder: (uri: Uri) => folders.find((f) => uri.fsPath.startsWith(f.uri.fsPath + path.sep)),
      textDocuments: docs,
      isTrusted: opts.trusted ?? true,
      onDidGrantWorkspaceTrust: (fn: () => void) => {
        rec.trustListeners.push(fn);
        return disposable;
      },
      findFiles: async () => (opts.files ?? []).map((f) => Uri.file(f)),
      registerTextDocumentContentProvider: (scheme: string, provider: Record['contentProviders'] extends Map<string, infer P> ? P : never) => {
        rec.contentProviders.set(scheme, provider);
        return disposable;
      },
      onDidChangeConfiguration: (fn: Record['configListeners'][number]) => {
        rec.configListeners.push(fn);
        return disposable;
      },
      onDidChangeTextDocument: (fn: Record['changeListeners'][number]) => {
        rec.changeListeners.push(fn);
        return disposable;
      },
      openTextDocument: async (uri: Uri) => docs.find((d) => d.uri.toString() === uri.toString()) ?? { uri },
    },
    window: {
      activeTextEditor: opts.activeFile ? { document: { uri: opts.activeFile } } : undefined,
      showErrorMessage: message('error'),
      showInformationMessage: message('info'),
      createOutputChannel: (name: string) => ({
        name,
        appendLine: (l: string) => rec.log.push(l),
        append: (l: string) => rec.log.push(l),
        show() {},
        dispose() {},
      }),
      createStatusBarItem: () => {
        rec.status.shown = false;
        return Object.assign(rec.status, { show: () => (rec.status.shown = true), dispose() {} });
      },
      createTerminal: (o: { name: string; cwd?: string }) => {
        const t: Terminal & { show(): void; sendText(s: string): void } = {
          name: o.name,
          cwd: o.cwd,
          sent: [],
          shown: false,
          exitStatus: undefined,
          show() {
            this.shown = true;
          },
          sendText(s: string) {
            this.sent.push(s);
          },
        };
        rec.terminals.push(t);
        return t;
      },
      get terminals() {
        return rec.terminals;
      },
      withProgress: async (_o: unknown, task: () => Promise<unknown>) => task(),
      registerCustomEditorProvider: (viewType: string, provider: CustomTextEditorProvider, options?: unknown) => {
        rec.customEditors.set(viewType, { provider, options });
        return disposable;
      },
      createWebviewPanel: (viewType: string, title: string, _show: unknown, options?: unknown) => {
        const p = webviewPanel(viewType, title, options);
        rec.webviewPanels.push(p);
        return p;
      },
      showQuickPick: async (items: Array<{ label: string }>, o?: { placeHolder?: string }) => {
        rec.quickPicks.push({ labels: items.map((i) => i.label), placeHolder: o?.placeHolder });
        const label = picks.shift();
        return items.find((i) => i.label === label);
      },
      visibleTextEditors: (opts.visibleTextEditors ?? []).map((e) => ({ document: { uri: e.uri }, viewColumn: e.viewColumn })),
      showTextDocument: async (doc: { uri: Uri }, o?: { viewColumn?: number; selection?: Range; preserveFocus?: boolean }) => {
        rec.shownText.push({ uri: doc.uri, viewColumn: o?.viewColumn, selection: o?.selection, preserveFocus: o?.preserveFocus });
        return { document: doc };
      },
    },
    languages: {
      createDiagnosticCollection: () => ({
        set: (uri: Uri, ds: Record['problems'] extends Map<string, infer V> ? V : never) => rec.problems.set(uri.fsPath, ds),
        delete: (uri: Uri) => rec.problems.delete(uri.fsPath),
        clear: () => rec.problems.clear(),
        dispose() {},
      }),
    },
    commands: {
      registerCommand: (id: string, fn: (...args: unknown[]) => unknown) => {
        rec.commands.set(id, fn);
        return disposable;
      },
      executeCommand: async (id: string, ...args: unknown[]) => {
        rec.executed.push([id, ...args]);
      },
    },
  };
  const languageclient = {
    State: { Stopped: 1, Starting: 3, Running: 2 },
    LanguageClient: class {
      started = false;
      stopped = false;
      constructor(
        readonly id: string,
        readonly name: string,
        readonly serverOptions: FakeClient['serverOptions'],
        readonly clientOptions: FakeClient['clientOptions'],
      ) {
        rec.clients.push(this);
      }
      onDidChangeState() {
        return disposable;
      }
      async start() {
        if (opts.startFails) {
          throw new Error(opts.startFails);
        }
        this.started = true;
      }
      async stop() {
        this.stopped = true;
      }
      sendRequest(method: string, params: unknown) {
        return opts.request ? opts.request(method, params) : Promise.reject(new Error(`no server for ${method}`));
      }
    },
  };
  return { vscode, languageclient, rec };
}

/** Load an extension build (tsc's out/src/extension.js, or the esbuild bundle) against the stand-in and activate it. */
export async function activate(file: string, opts: Options, extensionPath = '/nonexistent-extension') {
  const { vscode: api, languageclient, rec } = fakeVscode(opts);
  // The bundle inlines vscode-languageclient, whose modules subclass and read
  // many `vscode` types at load: unknown types are empty classes.
  const vscode = new Proxy(api, {
    get: (target, key) =>
      key in target ? (target as { [k: string | symbol]: unknown })[key] : typeof key === 'string' && /^[A-Z]/.test(key) ? class {} : undefined,
  });
  const mod = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
  const original = mod._load;
  mod._load = function (this: unknown, request: string, parent: unknown, isMain: boolean) {
    if (request === 'vscode') return vscode;
    if (request === 'vscode-languageclient/node') return languageclient;
    return original.call(this, request, parent, isMain);
  };
  delete require.cache[require.resolve(file)];
  try {
    const ext = require(file) as { activate(c: unknown): Promise<void>; deactivate(): Promise<void> };
    const context = { subscriptions: [] as unknown[], extensionPath };
    await ext.activate(context);
    return { ext, rec, context };
  } finally {
    mod._load = original;
  }
}
