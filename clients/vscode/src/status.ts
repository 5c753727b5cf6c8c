// What the status bar item says, whether a language gets suggestions, and the info line: pure
// logic, no `vscode` at run time, so that it is unit-tested under plain Node.
import { Draft } from './drafts';

/** The params of the server's `infill/status` notification (docs/protocol.md). */
export interface ServerStatus {
  state: 'loading' | 'ready' | 'error';
  engine: string;
  model: string;
  message: string;
}

/** The `diffusionInfill.enable` setting: languageId (or "*") -> on. */
export type Enable = Record<string, boolean>;

/** Whether `language` gets suggestions: its own entry, else "*", else on (Copilot's `enable` rule). */
export function enabledFor(enable: Enable, language: string): boolean {
  return language in enable ? enable[language] !== false : enable['*'] !== false;
}

/** `enable` with `key` ("*" or a languageId) switched to `on`. */
export function switched(enable: Enable, key: string, on: boolean): Enable {
  return { ...enable, [key]: on };
}

export interface StatusView {
  text: string;
  tooltip: string;
  failed: boolean; // a click opens the log instead of the menu
}

/** The status item for the server's last status (undefined: none yet; a string: the server stopped,
 * and why) and where suggestions are off for the active editor: undefined (on), "*" (everywhere)
 * or its languageId. */
export function statusView(status: ServerStatus | string | undefined, off?: string): StatusView {
  const named = typeof status === 'object' ? `${status.model} (engine ${status.engine})` : '';
  const menu = '. Click for the menu.';
  if (typeof status === 'string' || status?.state === 'error') {
    const why = typeof status === 'string' ? status : `${named}: ${status.message}`;
    return { text: '$(error) infill: error', tooltip: `diffusion-infill: ${why}. Click to open the log.`, failed: true };
  } else if (off === '*') {
    return { text: '$(circle-slash) infill: off', tooltip: `diffusion-infill: suggestions are off${menu}`, failed: false };
  } else if (off !== undefined) {
    return { text: `$(circle-slash) infill: off (${off})`, tooltip: `diffusion-infill: suggestions are off for ${off}${menu}`, failed: false };
  } else if (status === undefined) {
    return { text: '$(loading~spin) infill: starting', tooltip: 'diffusion-infill: starting the server', failed: false };
  } else if (status.state === 'loading') {
    return { text: '$(loading~spin) infill: loading', tooltip: `diffusion-infill: loading ${named}`, failed: false };
  }
  const where = status.message ? `, ${status.message}` : '';
  return { text: '$(check) infill: ready', tooltip: `diffusion-infill: ready: ${named}${where}${menu}`, failed: false };
}

/** Where suggestions are off for `language` (undefined: no editor): undefined when on, else the
 * `enable` key that turns them off ("*" or the languageId). */
export function offFor(enable: Enable, language: string | undefined): string | undefined {
  const key = language !== undefined && language in enable ? language : '*';
  return enable[key] === false ? key : undefined;
}

/** The info line after a suggestion: steps, milliseconds, confidence and where it came from, of the
 * first item (the one VS Code shows first: its own info, from `items`, where the server sends it). */
export function infoLine(draft: Draft): string {
  const item = draft.items?.[0] ?? draft;
  const confidence = typeof item.confidence === 'number' ? item.confidence.toFixed(2) : '-';
  return `${item.step} steps · ${item.ms ?? 0} ms · confidence ${confidence} · ${item.source ?? 'model'}`;
}
