// What the status bar item says in each state of the server. Pure, so the
// wording is tested without VS Code (test/status.test.ts).

/** The server's lifecycle as the extension sees it. */
export type ServerState =
  | { kind: 'starting'; binary: string }
  | { kind: 'running'; binary: string; detail: string }
  | { kind: 'stopped'; binary: string; reason?: string }
  | { kind: 'not-found'; message: string };

export interface StatusView {
  text: string;
  tooltip: string;
  /** The command a click runs. */
  command: string;
  /** Drawn with the error or warning background. */
  alarm?: 'error' | 'warning';
}

export function statusView(state: ServerState): StatusView {
  switch (state.kind) {
    case 'starting':
      return { text: '$(sync~spin) qflow', tooltip: `qflow: starting ${state.binary} lsp…`, command: 'qflow.showOutput' };
    case 'running':
      return {
        text: '$(check) qflow',
        tooltip: `qflow language server running: ${state.binary} (${state.detail}). Click for its log.`,
        command: 'qflow.showOutput',
      };
    case 'stopped':
      return {
        text: '$(error) qflow',
        tooltip: `qflow language server stopped${state.reason ? `: ${state.reason}` : ''}. Click to restart it; the log is in the qflow output channel.`,
        command: 'qflow.restartServer',
        alarm: 'error',
      };
    case 'not-found':
      return {
        text: '$(warning) qflow: no server',
        tooltip: `${state.message} Click to open the qflow.path setting.`,
        command: 'qflow.openSettings',
        alarm: 'warning',
      };
  }
}
