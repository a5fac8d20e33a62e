// The process drawn beside the text, in two faces that share everything
// below: the "qflow: Show Diagram" panel and the "qflow Diagram" custom
// editor (Reopen Editor With…). The drawing is the engine's (the language
// server's `qflow/diagram` request answers the model layer's SVG, the
// picture `qflow render` writes, with every verdict of the loader marked on
// its element); this module only shows it in a webview (`DiagramView`),
// asks again as the text changes (`DiagramViews`), and reveals an element in
// the text when it is clicked. A face only supplies the webview: the panel
// creates one, the custom editor is handed one by VS Code.
//
// Written against a small `Host` (the few VS Code calls it makes) so the
// tests drive it with the real server and a recording host.

/** A position and a range as LSP and VS Code both spell them. */
export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

/** One element of the drawing and where it is in the text. */
export interface DiagramElement {
  id: string;
  range: Range;
  selectionRange: Range;
}

/** The answer to `qflow/diagram`. */
export interface DiagramResult {
  version: number;
  process: string;
  processes: string[];
  svg: string;
  elements: DiagramElement[];
  marked: number;
  /**
   * The document's verdicts on no element of the drawing (a flow whose
   * reference dangles is not drawn; a document's own verdict is on no
   * element): said beside the drawing, which alone would hide them. Absent
   * from an older server's answer.
   */
  unmarked?: number;
}

/** The request's method and parameters (docs/language-server.md). */
export const DIAGRAM_REQUEST = 'qflow/diagram';
export function diagramParams(uri: string, processId?: string): { textDocument: { uri: string }; process?: string } {
  return processId ? { textDocument: { uri }, process: processId } : { textDocument: { uri } };
}

/**
 * `qflow render MODEL [--db DB] --instance ID --svg -`: the instance's state
 * drawn on the diagram of its deployment, on standard output. Without `db`
 * the binary finds the database as every command does ($QFLOW_DB, else the
 * `db` of the nearest qflow.toml).
 */
export function instanceRenderArgv(model: string, instance: string, db?: string): string[] {
  return ['render', model, ...(db ? ['--db', db] : []), '--instance', instance, '--svg', '-'];
}

/** `qflow instances [--db DB] --format json`: the instances to pick from. */
export function instancesArgv(db?: string): string[] {
  return ['instances', ...(db ? ['--db', db] : []), '--format', 'json'];
}

/** One instance of `qflow instances --format json`, as a picker lists it. */
export interface InstanceChoice {
  instance: string;
  process: string;
  status: string;
  detail: string;
}

/** The instances of `process` in the output of `qflow instances --format json`, FAILED first. */
export function instanceChoices(json: string, process: string): InstanceChoice[] {
  const parsed = JSON.parse(json) as { instances?: Array<{ instance: string; process: string; status: string; node?: string | null; code?: string | null }> };
  const rank = (s: string) => ['failed', 'waiting', 'running', 'completed'].indexOf(s);
  return (parsed.instances ?? [])
    .filter((i) => i.process === process)
    .map((i) => ({
      instance: i.instance,
      process: i.process,
      status: i.status,
      detail: [i.status.toUpperCase(), i.node ? `at ${i.node}` : '', i.code ?? ''].filter((s) => s).join(' '),
    }))
    .sort((a, b) => rank(a.status) - rank(b.status));
}

/** What the webview posts when an element is clicked. */
export interface RevealMessage {
  type: 'reveal';
  id: string;
}

export function isRevealMessage(m: unknown): m is RevealMessage {
  return typeof m === 'object' && m !== null && (m as RevealMessage).type === 'reveal' && typeof (m as RevealMessage).id === 'string';
}

/** What the webview posts when, an instance drawn, its "the text's verdicts" button is clicked. */
export interface VerdictsMessage {
  type: 'verdicts';
}

export function isVerdictsMessage(m: unknown): m is VerdictsMessage {
  return typeof m === 'object' && m !== null && (m as VerdictsMessage).type === 'verdicts';
}

/** The note `fetch` writes over an instance's drawing; `page` offers the way back beside it. */
const INSTANCE_NOTE = /^instance .*, its state read from the database$/;

/** The webview a drawing is shown in: its HTML and its messages. */
export interface Webview {
  html: string;
  cspSource: string;
  onDidReceiveMessage(listener: (m: unknown) => void): { dispose(): void };
}

/**
 * Where a drawing is shown: a webview and its end. The panel's own
 * `WebviewPanel`, or the one VS Code hands a custom editor.
 */
export interface Surface {
  webview: Webview;
  onDidDispose(listener: () => void): unknown;
  /**
   * Whether it is the editor the user is in (VS Code's `WebviewPanel.active`,
   * read when asked): a command run from the palette or the title bar of a
   * diagram acts on that diagram, as it would on the active text editor.
   */
  readonly active?: boolean;
}

/** The webview options both faces set: the one inline script, and no local resource at all. */
export const WEBVIEW_OPTIONS = { enableScripts: true, localResourceRoots: [] as never[] };

/** The custom editor's view type (package.json `customEditors`). */
export const DIAGRAM_EDITOR = 'qflow.diagram';
/** The Show Diagram panel's view type (another than the editor's). */
export const DIAGRAM_PANEL = 'qflow.diagramPanel';

/** What a drawing needs of VS Code. */
export interface Host {
  /** Ask the language server (undefined when it is not running). */
  request(uri: string): Promise<DiagramResult | null | undefined>;
  /** A webview panel beside the text, titled (the Show Diagram panel; a custom editor is handed its own). */
  createPanel(title: string): Surface & { title: string };
  /** Put the cursor on `range` of the document `uri`, in a text editor (beside the diagram when none shows it). */
  reveal(uri: string, range: Range): Promise<void> | void;
  /** The SVG of an instance's state on the diagram (`qflow render --instance`). */
  renderInstance?(uri: string, instance: string): Promise<string>;
}

/** A nonce for the webview's one inline script. */
function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < 32; i++) {
    out += chars.charAt(Math.floor(Math.random() * chars.length));
  }
  return out;
}

function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/**
 * The webview's page: the SVG as the server drew it, a line saying what is
 * shown, a button between the drawing fitted to the width and its own size,
 * and a script that posts `{type: 'reveal', id}` when a node or a flow is
 * clicked. Fitted is the default (the whole process at a glance); a wide
 * process in a narrow panel is unreadable so (a third of the window draws
 * run-order.bpmn's labels at a few pixels), so its own size scrolls instead.
 * The choice is the webview's state (`setState`), kept across redraws, which
 * replace the page. Nothing is loaded from anywhere (the content security
 * policy allows the inline style and the one script with its nonce); the
 * SVG is the server's, whose texts are escaped where it writes them.
 */
export function page(result: DiagramResult | null, cspSource: string, note?: string): string {
  const n = nonce();
  const head = `<meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src ${cspSource} data:; style-src 'unsafe-inline' ${cspSource}; script-src 'nonce-${n}';">`;
  const style = `<style>body{margin:0;padding:8px;font:12px sans-serif;background:#fff;color:#222}.status{margin:0 0 6px;color:#555}.qflow-diagram{max-width:100%;height:auto}[data-id]{cursor:pointer}body.actual .qflow-diagram{max-width:none}.zoom{margin-left:8px;font:inherit;cursor:pointer}</style>`;
  if (!result) {
    return `<!DOCTYPE html><html><head>${head}${style}</head><body><p class="status">${escapeHtml(note ?? 'no process to draw (the text is not a BPMN model yet)')}</p></body></html>`;
  }
  const status = [
    `process ${result.process}`,
    result.processes.length > 1 ? `(${result.processes.length} in the file)` : '',
    note?.startsWith('instance ') ? '' : result.marked === 0 ? 'no finding on the drawing' : `${result.marked} finding${result.marked === 1 ? '' : 's'} marked`,
    note?.startsWith('instance ') || !result.unmarked
      ? ''
      : `${result.unmarked} more on no element drawn (in the Problems panel)`,
    note ?? '',
  ]
    .filter((s) => s)
    .join(' · ');
  const script = `<script nonce="${n}">
const vscode = acquireVsCodeApi();
const zoom = document.getElementById('zoom');
function sized(actual) {
  document.body.classList.toggle('actual', actual);
  zoom.textContent = actual ? 'fit to width' : 'actual size';
}
sized(!!(vscode.getState() || {}).actual);
zoom.addEventListener('click', () => {
  const actual = !document.body.classList.contains('actual');
  vscode.setState({ actual });
  sized(actual);
});
const verdicts = document.getElementById('verdicts');
if (verdicts) { verdicts.addEventListener('click', () => vscode.postMessage({ type: 'verdicts' })); }
document.addEventListener('click', (e) => {
  const el = e.target && e.target.closest ? e.target.closest('[data-id]') : null;
  if (el) { vscode.postMessage({ type: 'reveal', id: el.getAttribute('data-id') }); }
});
</script>`;
  return `<!DOCTYPE html><html><head>${head}${style}</head><body><p class="status">${escapeHtml(status)}<button id="zoom" class="zoom" type="button">actual size</button>${
    note !== undefined && INSTANCE_NOTE.test(note) ? '<button id="verdicts" class="zoom" type="button">the text\'s verdicts</button>' : ''
  }</p>${result.svg}${script}</body></html>`;
}

/**
 * The drawing of one document in one webview, whichever face holds it:
 * shows the server's drawing, asks again whenever `update()` is called (on
 * every change of the text), never two requests at once (a burst of changes
 * during a request asks once more after it, for the latest text), and keeps
 * the last drawing while the text does not parse.
 */
export class DiagramView {
  private last: DiagramResult | null = null;
  private inFlight: Promise<void> | undefined;
  private again = false;
  private disposed = false;
  private readonly disposeListeners: Array<() => void> = [];
  /** Draw this instance's state (read from the database) instead of the text's verdicts. */
  private instance: string | undefined;

  constructor(
    private readonly host: Host,
    readonly uri: string,
    readonly panel: Surface,
  ) {
    panel.onDidDispose(() => {
      this.disposed = true;
      this.disposeListeners.forEach((l) => l());
    });
    panel.webview.onDidReceiveMessage((m) => void this.onMessage(m));
  }

  /** Call `listener` when the webview is closed. */
  onDidDispose(listener: () => void): void {
    this.disposeListeners.push(listener);
  }

  get result(): DiagramResult | null {
    return this.last;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  /** Draw `instance`'s state from now on (undefined: the text's verdicts again). */
  showInstance(instance: string | undefined): Promise<void> {
    this.instance = instance;
    return this.update();
  }

  /** Ask the server for the current text's drawing and show it. */
  update(): Promise<void> {
    if (this.inFlight) {
      this.again = true;
      return this.inFlight;
    }
    this.inFlight = (async () => {
      do {
        this.again = false;
        await this.fetch();
      } while (this.again && !this.disposed);
    })().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private async fetch(): Promise<void> {
    let result: DiagramResult | null | undefined;
    let note: string | undefined;
    try {
      result = await this.host.request(this.uri);
    } catch (e) {
      note = `the language server could not draw it: ${e instanceof Error ? e.message : String(e)}`;
    }
    if (this.disposed) {
      return;
    }
    if (result === undefined && note === undefined) {
      note = 'the language server is not running';
    }
    if (result) {
      this.last = result;
    } else if (this.last) {
      // Not well-formed just now, say: keep the last drawing, and say so.
      note = note ?? 'the text does not parse: the last drawing is shown';
    }
    if (this.instance && this.last && this.host.renderInstance) {
      // The instance's state, as `qflow render` draws it from the database
      // (on its deployment's model); the elements stay the text's, so a
      // click still reveals.
      try {
        const svg = await this.host.renderInstance(this.uri, this.instance);
        if (this.disposed) {
          return;
        }
        const shown: DiagramResult = { ...this.last, svg, marked: 0, unmarked: 0 };
        this.panel.webview.html = page(shown, this.panel.webview.cspSource, `instance ${this.instance}, its state read from the database`);
        return;
      } catch (e) {
        note = `instance ${this.instance} could not be drawn: ${e instanceof Error ? e.message : String(e)}`;
      }
    }
    this.panel.webview.html = page(this.last, this.panel.webview.cspSource, note);
  }

  /** A click on an element: put the cursor on its id in the text; the "text's verdicts" button: leave the instance. */
  async onMessage(m: unknown): Promise<void> {
    if (isVerdictsMessage(m)) {
      // Back from an instance's state to the text's drawing and verdicts.
      await this.showInstance(undefined);
      return;
    }
    if (!isRevealMessage(m) || !this.last) {
      return;
    }
    const el = this.last.elements.find((e) => e.id === m.id);
    if (el) {
      await this.host.reveal(this.uri, el.selectionRange);
    }
  }
}

/** The Show Diagram panel: a drawing in a webview panel of its own, beside the text. */
export class DiagramPanel extends DiagramView {
  declare readonly panel: Surface & { title: string };

  constructor(host: Host, uri: string, title: string) {
    super(host, uri, host.createPanel(title));
  }
}

/**
 * Every open drawing, by document, whichever face shows it: a change of a
 * document's text redraws each of its views; a closed view is forgotten.
 */
export class DiagramViews {
  private readonly byUri = new Map<string, Set<DiagramView>>();

  /** Keep `view` until its webview is closed. */
  add<V extends DiagramView>(view: V): V {
    let set = this.byUri.get(view.uri);
    if (!set) {
      set = new Set();
      this.byUri.set(view.uri, set);
    }
    set.add(view);
    view.onDidDispose(() => {
      set.delete(view);
      if (set.size === 0 && this.byUri.get(view.uri) === set) {
        this.byUri.delete(view.uri);
      }
    });
    return view;
  }

  /** The open views of a document. */
  of(uri: string): DiagramView[] {
    return [...(this.byUri.get(uri) ?? [])];
  }

  /**
   * The view the user is in (a qflow Diagram editor, or the Show Diagram
   * panel, when it is the active editor), of `uri` when one is given (the
   * resource a title-bar command is invoked on); undefined when the user is
   * in no drawing.
   */
  active(uri?: string): DiagramView | undefined {
    const candidates = uri !== undefined ? this.of(uri) : [...this.byUri.values()].flatMap((set) => [...set]);
    return candidates.find((v) => v.panel.active === true && !v.isDisposed);
  }

  /** The text of `uri` changed: redraw each of its views. */
  changed(uri: string): Promise<void> {
    return Promise.all(this.of(uri).map((v) => v.update())).then(() => undefined);
  }
}

/**
 * The custom editor's face ("qflow Diagram", Reopen Editor With…): the
 * webview VS Code hands it shows the document's drawing, redrawn as the
 * document changes, a click revealing the element in a text editor.
 */
export function resolveDiagramEditor(host: Host, views: DiagramViews, uri: string, surface: Surface): Promise<DiagramView> {
  const view = views.add(new DiagramView(host, uri, surface));
  return view.update().then(() => view);
}
